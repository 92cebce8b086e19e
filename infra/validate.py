"""Validate team specs: `python -m infra.validate [FILES...]` (default: every infra/teams/*.yaml).

Each file is checked against the schema and the platform (infra/spec.py), then against every other
team for overlapping ranges and duplicate names, so a pull request that adds one team is checked
against all the teams already there. Every problem is printed, one a line, naming the file and the
field; the exit status is 1 if there was any, else 0 with one line per team.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import spec


def validate(files: list[Path] | None = None, teams_dir: Path = spec.TEAMS_DIR,
             platform: spec.Platform | None = None) -> tuple[list[spec.TeamSpec], list[str]]:
    """(the specs of `files` that are valid, every problem). No files: every spec in teams_dir.

    The committed specs not among `files` take part in the cross-team checks only; the problems
    reported are those of `files` (a broken committed spec is reported when it is validated itself).
    """
    platform = platform or spec.load_platform()
    paths = [Path(f) for f in files] if files else sorted(teams_dir.glob("*.yaml"))
    chosen = {p.resolve() for p in paths}
    specs, problems = [], []
    for path in paths:
        try:
            specs.append(spec.load(path, platform))
        except spec.SpecError as e:
            problems.extend(e.problems)
    others = []
    for path in sorted(teams_dir.glob("*.yaml")):
        if path.resolve() in chosen:
            continue
        try:
            others.append(spec.load(path, platform))
        except spec.SpecError:
            continue
    # check_all names the later of two clashing specs, so the files being validated go last
    problems.extend(spec.check_all(others + specs))
    return specs, problems


def summary(s: spec.TeamSpec) -> str:
    mirrored = [k.cluster for k in s.kafka if k.mirrored]
    return (f"OK {s.name} ({s.source}): {s.tier}, spark {s.spark.flavour} {s.spark.workers}x"
            f"{s.spark.worker_cores} CPU/{s.spark.worker_memory_gb} GB, {s.cidr}, region {s.region}, "
            f"kafka {', '.join(k.cluster for k in s.kafka) or 'none'}"
            f"{' (mirrored: ' + ', '.join(mirrored) + ')' if mirrored else ''}, owners {' '.join(s.owners)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m infra.validate", description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=Path,
                        help="team specs to validate (default: every infra/teams/*.yaml)")
    args = parser.parse_args(argv)
    specs, problems = validate(args.files or None)
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} problem(s) in the team specs", file=sys.stderr)
        return 1
    for s in specs:
        print(summary(s))
    return 0


if __name__ == "__main__":
    sys.exit(main())
