"""Running `python -m lab` from tests, on ports of their own."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PORT_BASE = 23000       # away from a developer's lab on the default 19000


def lab(command: list[str], env: dict, timeout: int = 900) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lab", *command], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=timeout)
