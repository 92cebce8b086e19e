"""The teams' secrets the portal deploys and previews with: a directory of files, each named by the
variable a team's specs refer to (DAGGER_SECRET_<TEAM>__<NAME>, dagger_runtime.lifecycle.spark's
one rule) and holding its value, owned by the portal's user and 0600 (the deploy tooling's own
environment, as `dagger deploy` is given it by an operator). They go into the process's environment,
where deploy looks for a spec's references: deploy hands a driver only its own team's, and
spark-submit gets nothing else of the portal's environment."""

from __future__ import annotations

import os
import re
from pathlib import Path

from dagger_runtime.errors import DaggerError

NAME = re.compile(r"DAGGER_SECRET_[A-Z0-9_]+__[A-Z0-9_]+")


def load(directory: str | Path) -> list[str]:
    """Put every secret of `directory` in os.environ; their names. Refuses a loose or odd file."""
    folder = Path(directory)
    try:
        mode = folder.stat().st_mode
    except OSError as e:
        raise DaggerError(f"cannot read the teams' secrets folder {folder}: {e.strerror}") from None
    if mode & 0o077:
        raise DaggerError(
            f"the teams' secrets folder {folder} may be read by others (mode {mode & 0o777:o}): make it 0700"
        )
    names = []
    for path in sorted(folder.iterdir()):
        if not NAME.fullmatch(path.name) or path.is_symlink() or not path.is_file():
            raise DaggerError(f"{path}: the teams' secrets folder holds only files named DAGGER_SECRET_<TEAM>__<NAME>")
        if path.stat().st_mode & 0o077:
            raise DaggerError(f"{path} may be read by others: make it 0600")
        value = path.read_text().strip()
        if not value or "\n" in value:
            raise DaggerError(f"{path}: one line, the secret's value")
        os.environ[path.name] = value
        names.append(path.name)
    return names
