"""The teams' secrets a lab's portal deploys and previews with, named as a team's specs refer to
them (lab.access.team_secret_files: DAGGER_SECRET_<TEAM>__<NAME> and the lab's file holding each).

    teams | portal_team_secrets(lab_dir)   -> [{name: DAGGER_SECRET_ALLOCATIONS__KAFKA_PASSWORD, file: ...}, ...]
"""

from __future__ import annotations

import sys
from pathlib import Path

from ansible.errors import AnsibleFilterError

REPO = Path(__file__).resolve().parents[2]


def portal_team_secrets(teams, lab_dir):
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    from lab import access

    out = []
    for team in teams:
        try:
            files = access.team_secret_files(str(team), Path(str(lab_dir)))
        except ValueError as e:
            raise AnsibleFilterError(f"portal_team_secrets: {e}") from None
        out.extend({"name": name, "file": str(path)} for name, path in sorted(files.items()))
    return out


class FilterModule:
    def filters(self):
        return {"portal_team_secrets": portal_team_secrets}
