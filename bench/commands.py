"""How long an analyst waits: `validate` and `preview` wall time on the example daggers, run as
the analyst runs them (a new process each time), next to how long the query itself takes inside
preview, each command cold (starting its own Spark) and warm (through `dagger warm`). Each run
appends one line per command and mode to bench/results/commands.jsonl with the commit, so a
change is read as before and after:

    python -m bench.commands [--repeat 2] [--events 2000] [--mode cold|warm|both]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from dagger_runtime.inputs import write_delimited

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples" / "daggers"
RESULTS = REPO / "bench" / "results" / "commands.jsonl"


def inputs_for(job: Path, folder: Path, events: int) -> list[str]:
    """--input TABLE=FILE for each stream of the job: generated traffic of its message type."""
    from dagger_runtime.config import load_job
    from loadtest import traffic
    from protos import registry

    dset = registry.load()
    out = []
    for stream in load_job(job).streams:
        message = dset.message_descriptor(stream.proto_class).full_name
        make = traffic.GENERATORS.get(message)
        if make is None:
            return []
        path = folder / f"{job.stem}-{stream.table}.bin"
        write_delimited(traffic.encode(make(events, minutes=3), dset.message_class(message)), path)
        out.append(f"{stream.table}={path}")
    return out


def wall(command: list[str], env: dict | None = None) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=600, env=env)
    took = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed: {done.stderr[-1500:]}")
    return took, done.stderr


@contextlib.contextmanager
def warm_process(folder: Path):
    """A warm process of the bench's own (its socket in folder), and the env that reaches it."""
    env = {**os.environ, "DAGGER_WARM_SOCKET": str(Path(folder) / "warm" / "warm.sock")}
    took, _ = wall([sys.executable, "-m", "dagger_runtime", "warm", "start"], env)
    print(f"[bench] warm start: {took:.1f} s (once, before the first command)", file=sys.stderr)
    try:
        yield env
    finally:
        subprocess.run(
            [sys.executable, "-m", "dagger_runtime", "warm", "stop"],
            cwd=REPO,
            env=env,
            capture_output=True,
            timeout=120,
        )


def commit() -> str | None:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True)
    return done.stdout.strip() or None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.commands", description=__doc__.split("\n\n")[0])
    p.add_argument("--repeat", type=int, default=2, help="runs per command; best and median kept (default 2)")
    p.add_argument("--events", type=int, default=2000, help="generated messages per preview input (default 2000)")
    p.add_argument(
        "--mode",
        choices=("cold", "warm", "both"),
        default="both",
        help="cold: each command starts its Spark (--no-warm); warm: through a warm process "
        "started once (`dagger warm start`); both (default)",
    )
    p.add_argument("--out", default=str(RESULTS), help="the JSON lines file results are appended to")
    args = p.parse_args(argv)

    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-commands-") as folder:
        jobs = [j for j in sorted(EXAMPLES.iterdir()) if j.suffix in (".yaml", ".properties")]
        runs = []
        for job in jobs:
            runs.append(("validate", job, [sys.executable, "-m", "dagger_runtime", "validate", str(job)]))
            inputs = inputs_for(job, Path(folder), args.events)
            if inputs:
                runs.append(
                    (
                        "preview",
                        job,
                        [
                            sys.executable,
                            "-m",
                            "dagger_runtime",
                            "preview",
                            str(job),
                            *[a for i in inputs for a in ("--input", i)],
                        ],
                    )
                )
        for mode in ["cold", "warm"] if args.mode == "both" else [args.mode]:
            with warm_process(Path(folder)) if mode == "warm" else contextlib.nullcontext() as env:
                for name, job, command in runs:
                    command = command + (["--no-warm"] if mode == "cold" else [])
                    times, query = [], None
                    for i in range(args.repeat):
                        took, stderr = wall(command, env)
                        times.append(took)
                        found = re.search(r"result rows in ([\d.]+)s", stderr)
                        query = float(found.group(1)) if found else query
                        print(
                            f"[bench] {name} {job.name} ({mode}): run {i + 1}/{args.repeat} {took:.1f} s",
                            file=sys.stderr,
                        )
                    rows.append(
                        {
                            "command": name,
                            "job": job.name,
                            "mode": mode,
                            "best_seconds": round(min(times), 2),
                            "median_seconds": round(statistics.median(times), 2),
                            "query_seconds": query,
                            "commit": commit(),
                            "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                        }
                    )
    out = Path(args.out)
    previous = {}
    if out.exists():
        for line in out.read_text().splitlines():
            row = json.loads(line)
            previous[(row["command"], row["job"], row.get("mode", "cold"))] = row
    with out.open("a") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"commands, best of {args.repeat}", title_justify="left")
    for column, justify in (
        ("command", "left"),
        ("job", "left"),
        ("mode", "left"),
        ("before", "right"),
        ("now", "right"),
        ("query", "right"),
    ):
        table.add_column(column, justify=justify)
    for row in rows:
        before = previous.get((row["command"], row["job"], row["mode"]))
        table.add_row(
            row["command"],
            row["job"],
            row["mode"],
            f"{before['best_seconds']} s" if before else "-",
            f"{row['best_seconds']} s",
            f"{row['query_seconds']} s" if row["query_seconds"] is not None else "-",
        )
    Console().print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
