"""`dagger lab up|status|down`: the lab on this machine, through the project's Ansible playbooks.

    up      converge playbooks/site.yml onto the lab inventory (supervisord, Kafka primary and
            mirror, ...), showing each task as it runs; a lab that is already up changes nothing
            and says so
    status  every component: up or down, address, pid, version (--json for machines)
    down    stop every service and supervisord (playbooks/lab-down.yml); the data stays

The lab lives in DAGGER_LAB_DIR (default <repo>/.lab) on fixed loopback ports from
DAGGER_LAB_PORT_BASE (default 19000).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from dagger_runtime.closed_pipe import survives_closed_pipe

REPO = Path(__file__).resolve().parent.parent
PLAYBOOKS = REPO / "playbooks"
INVENTORY = PLAYBOOKS / "inventories" / "lab" / "hosts.yml"


def lab_dir() -> Path:
    return Path(os.environ.get("DAGGER_LAB_DIR") or REPO / ".lab").resolve()


@dataclass
class Converged:
    ok: bool
    changed: int  # tasks that changed something, over all hosts
    failures: list[str]  # "host: task: message" of each failed task
    stats: dict
    changed_tasks: list[str] = field(default_factory=list)  # "host: task" of each change


def converge(playbook: str, *, out=sys.stderr, quiet: bool = False) -> Converged:
    """Run a playbook of playbooks/ on the lab inventory with ansible-runner, one progress line
    per task (a live spinner on a terminal)."""
    import ansible_runner
    from rich.console import Console

    console = Console(file=out, highlight=False, soft_wrap=True)
    failures: list[str] = []
    changed_tasks: list[str] = []
    state = {"task": "", "tasks": 0}
    work = lab_dir() / ".runner"
    work.mkdir(parents=True, exist_ok=True)

    def on_event(event: dict) -> bool:
        data = event.get("event_data") or {}
        kind = event.get("event")
        if kind == "playbook_on_task_start":
            state["tasks"] += 1
            state["task"] = data.get("task", "")
            if status is not None:
                status.update(f"[{state['tasks']}] {data.get('play', '')}: {state['task']}")
            elif not quiet:
                console.print(f"  {data.get('play', '')}: {state['task']}")
        elif kind == "runner_on_ok" and (data.get("res") or {}).get("changed"):
            changed_tasks.append(f"{data.get('host')}: {data.get('task')}")
        elif kind in ("runner_on_failed", "runner_on_unreachable") and not data.get("ignore_errors"):
            result = data.get("res") or {}
            message = result.get("msg") or result.get("stderr") or result.get("stdout") or "failed"
            failures.append(f"{data.get('host')}: {data.get('task')}: {str(message).strip()[:2000]}")
        return True

    # ansible-playbook and supervisorctl from the virtualenv this runs in
    venv_bin = str(Path(sys.executable).parent)
    env = {
        "PATH": venv_bin + os.pathsep + os.environ.get("PATH", ""),
        "ANSIBLE_CONFIG": str(PLAYBOOKS / "ansible.cfg"),
        "DAGGER_LAB_DIR": str(lab_dir()),
        "ANSIBLE_ROLES_PATH": str(PLAYBOOKS / "roles"),
        "ANSIBLE_FILTER_PLUGINS": str(PLAYBOOKS / "filter_plugins"),
    }
    if os.environ.get("DAGGER_LAB_PORT_BASE"):
        env["DAGGER_LAB_PORT_BASE"] = os.environ["DAGGER_LAB_PORT_BASE"]
    live = console.is_terminal and not quiet
    cm = console.status(f"{playbook}: starting") if live else _Nothing()
    with cm as status:
        if not live:
            status = None
        runner = ansible_runner.run(
            private_data_dir=str(work),
            project_dir=str(PLAYBOOKS),
            playbook=playbook,
            inventory=str(INVENTORY),
            envvars=env,
            event_handler=on_event,
            quiet=True,
            rotate_artifacts=3,
        )
    stats = runner.stats or {}
    changed = sum((stats.get("changed") or {}).values())
    ok = runner.rc == 0 and not failures
    if not ok and not failures:  # a playbook that did not even start (syntax, missing file)
        text = runner.stdout.read() if runner.stdout else ""
        failures.append(f"ansible-playbook exited {runner.rc}: {text.strip()[-2000:]}")
    return Converged(ok, changed, failures, stats, changed_tasks)


_LIST_CHANGES_UP_TO = 40


class _Nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


@dataclass
class Component:
    name: str
    kind: str
    address: str
    version: str
    program: str
    state: str  # supervisord's state (RUNNING, STOPPED, ...), or "unknown"
    pid: int | None
    answers: bool  # its address accepts a TCP connection

    @property
    def up(self) -> bool:
        return self.state == "RUNNING" and self.answers


def components() -> list[Component]:
    """Every component the playbooks described, with its process state and whether it answers."""
    supervisor = lab_dir() / "supervisor"
    states = _supervisor_states(supervisor)
    found = []
    for path in sorted((supervisor / "components").glob("*.json")):
        described = json.loads(path.read_text())
        state, pid = states.get(described["program"], ("unknown", None))
        found.append(
            Component(
                described["name"],
                described["kind"],
                described["address"],
                str(described["version"]),
                described["program"],
                state,
                pid,
                _answers(described["address"]),
            )
        )
    return found


def _supervisor_states(supervisor: Path) -> dict[str, tuple[str, int | None]]:
    conf = supervisor / "supervisord.conf"
    if not conf.exists():
        return {}
    ctl = Path(sys.executable).with_name("supervisorctl")
    result = subprocess.run([str(ctl), "-c", str(conf), "status"], capture_output=True, text=True, timeout=30)
    states = {}
    for line in result.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 2 and not line.startswith(("unix://", "error")):
            pid = None
            if "pid" in parts:
                try:
                    pid = int(parts[parts.index("pid") + 1].rstrip(","))
                except (ValueError, IndexError):
                    pid = None
            states[parts[0]] = (parts[1], pid)
    return states


def _answers(address: str) -> bool:
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=1):
            return True
    except (OSError, ValueError):
        return False


def show_status(found: list[Component], out=sys.stdout) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"lab at {lab_dir()}")
    for column in ("component", "state", "address", "pid", "version"):
        table.add_column(column)
    for c in found:
        state = "[green]up[/green]" if c.up else f"[red]down[/red] ({c.state.lower()})"
        table.add_row(c.name, state, c.address, str(c.pid or "-"), c.version)
    Console(file=out).print(table)


def build_parser(prog: str = "python -m lab") -> argparse.ArgumentParser:
    """The command line's parser (`dagger` builds it under its own name; docs/reference/commands.md)."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1],
    )
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("up", help="start the lab, or check it is up (idempotent)")
    status = commands.add_parser("status", help="every component: up or down, address, pid, version")
    status.add_argument("--json", action="store_true", help="one JSON object on stdout")
    commands.add_parser("down", help="stop every lab service; the data stays")
    return parser


@survives_closed_pipe
def main(argv: list[str] | None = None, prog: str = "python -m lab") -> int:
    args = build_parser(prog).parse_args(argv)

    if args.command == "status":
        found = components()
        if args.json:
            print(
                json.dumps(
                    {
                        "lab_dir": str(lab_dir()),
                        "up": bool(found) and all(c.up for c in found),
                        "components": [{**asdict(c), "up": c.up} for c in found],
                    }
                )
            )
        elif not found:
            print(f"no lab at {lab_dir()}: start it with `python -m lab up`")
        else:
            show_status(found)
        return 0 if found and all(c.up for c in found) else 1

    playbook = "site.yml" if args.command == "up" else "lab-down.yml"
    result = converge(playbook)
    if not result.ok:
        for failure in result.failures:
            print(f"lab {args.command}: failed: {failure}", file=sys.stderr)
        print(
            f"lab {args.command}: failed (the run's events are in {lab_dir() / '.runner' / 'artifacts'})",
            file=sys.stderr,
        )
        return 1
    if args.command == "down":
        print(f"lab down: stopped ({result.changed} changes); the data stays in {lab_dir()}")
        return 0
    print("lab up: already up, nothing changed" if result.changed == 0 else f"lab up: {result.changed} changes")
    if 0 < len(result.changed_tasks) <= _LIST_CHANGES_UP_TO:  # what a re-run changed is worth reading
        for task in result.changed_tasks:
            print(f"  changed: {task}")
    show_status(components())
    return 0


if __name__ == "__main__":
    sys.exit(main())
