"""Running `python -m lab` from tests, on ports of their own."""

from __future__ import annotations

import json
import subprocess
import sys
from base64 import b64encode
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PORT_BASE = 23000  # away from a developer's lab on the default 19000


class Quiet(dict):
    """A dict that shows its keys only: pytest prints a failing test's arguments, and a lab's
    environment or logins (the process environment, the registry's URL, Kafka's password) must
    not reach a CI log."""

    def __repr__(self) -> str:
        return "{" + ", ".join(f"{k!r}: ..." for k in self) + "}"


def lab(command: list[str], env: dict, timeout: int = 900) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "lab", *command], cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout
    )


def team_influx(lab_dir: Path, port_base: int, team: str, query: str, epoch: str | None = None) -> list[dict]:
    """The series of an InfluxQL query on the lab's InfluxDB, read as the team's sink user in the
    team's database."""
    import urllib.request

    from lab import access

    user = access.sink_user(team)
    params = {"db": access.sink_database(team), "q": query, **({"epoch": epoch} if epoch else {})}
    login = b64encode(f"{user}:{access.influx_password(user, lab_dir)}".encode()).decode()
    request = urllib.request.Request(
        f"http://127.0.0.1:{port_base + 4086}/query",
        data=urllib.parse.urlencode(params).encode(),
        headers={"Authorization": f"Basic {login}"},
    )
    with urllib.request.urlopen(request, timeout=10) as r:
        return json.loads(r.read())["results"][0].get("series", [])
