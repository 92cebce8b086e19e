"""Validate team specs: `dagger team validate [FILES...]` (default: every infra/teams/*.yaml).

Each file is checked against the schema and the platform (infra/spec.py), against what the
platform team grants the team (infra/grants/<team>.yaml: tier, quota ceilings, Kafka clusters;
infra/grants.py), then against every other team for overlapping ranges and duplicate names, so a
pull request that adds one team is checked against all the teams already there. Every problem is
printed, one a line, naming the file, the line and the field; the exit status is 2 if there was
any, else 0 with one line per team.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import yaml

from dagger_runtime import exit_codes
from dagger_runtime.closed_pipe import survives_closed_pipe
from dagger_runtime.yaml_lines import printable

from . import grants, spec, topics


def where(s: spec.TeamSpec, field: str) -> str:
    """`<file>:<line>: <field>` in a spec: TeamSpec.where where the spec has it, else read here."""
    own = getattr(s, "where", None)
    if callable(own):
        return own(field)
    return f"{s.source}:{_line(s.source, field)}: {field}"


def _line(source: str, field: str) -> int:
    """The line of `field` (`quota.cpu`, `kafka[0].cluster`) in the spec file, else of its nearest
    parent; a field the spec leaves to its tier's defaults points at `tier`."""
    path = Path(source) if Path(source).is_absolute() else spec.INFRA.parent / source
    try:
        node = yaml.compose(path.read_text())
    except (OSError, yaml.YAMLError):
        return 1
    parts = [p for p in field.replace("[", ".").replace("]", "").split(".") if p]
    line, first = None, True
    while node is not None and parts:
        part, child = parts.pop(0), None
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if getattr(key, "value", None) == part:
                    line, child = key.start_mark.line + 1, value
        elif isinstance(node, yaml.SequenceNode) and part.isdigit() and int(part) < len(node.value):
            child = node.value[int(part)]
            line = child.start_mark.line + 1
        if child is None and first and part != "tier":
            return _line(source, "tier")
        node, first = child, False
    return line or 1


def validate(
    files: list[Path] | None = None,
    teams_dir: Path = spec.TEAMS_DIR,
    platform: spec.Platform | None = None,
    grants_dir: Path = grants.GRANTS_DIR,
) -> tuple[list[spec.TeamSpec], list[str]]:
    """(the specs of `files` that are valid, every problem). No files: every spec in teams_dir.

    The committed specs not among `files` take part in the cross-team checks only; the problems
    reported are those of `files`, and one line for each committed spec that does not load (its
    details when it is validated itself) or stray file in teams_dir: the checks between teams never
    run on fewer teams than there are (fail closed).
    A spec that asks for more than its grant (grants_dir/<team>.yaml), or has none, is refused.
    """
    platform = platform or spec.load_platform()
    committed, problems = spec.team_files(teams_dir)
    paths = [Path(f) for f in files] if files else committed
    chosen = {p.resolve() for p in paths}
    granted, broken = grants.load_all(grants_dir, grants.platform_clusters(platform))
    specs = []
    for path in paths:
        try:
            s = spec.load(path, platform)
        except spec.SpecError as e:
            problems.extend(e.problems)
            continue
        specs.append(s)
        if s.name in broken:
            problems.extend(broken[s.name])
            problems.append(
                f"{where(s, 'team')}: the grant of team {s.name} is invalid (above); "
                f"ask {grants.PLATFORM_OWNER} to fix infra/grants/{s.name}.yaml"
            )
        else:
            problems.extend(grants.problems_of(s, granted.get(s.name), lambda f, s=s: where(s, f)))
    others = []
    for path in committed:
        if path.resolve() in chosen:
            continue
        try:
            others.append(spec.load(path, platform))
        except spec.SpecError as e:
            # fail closed: a committed spec that does not load fails every run, never drops out
            problems.append(spec.unloadable(path, e.problems))
    # check_all names the later of two clashing specs, so the files being validated go last
    problems.extend(spec.check_all(others + specs))
    return specs, problems


def summary(s: spec.TeamSpec) -> str:
    mirrored = [k.cluster for k in s.kafka if k.mirrored]
    return (
        f"OK {s.name} ({s.source}): {s.tier}, spark {s.spark.flavour} {s.spark.workers}x"
        f"{s.spark.worker_cores} CPU/{s.spark.worker_memory_gb} GB, {s.cidr}, region {s.region}, "
        f"kafka {', '.join(k.cluster for k in s.kafka) or 'none'}"
        f"{' (mirrored: ' + ', '.join(mirrored) + ')' if mirrored else ''}, owners {' '.join(s.owners)}"
    )


def as_json(s: spec.TeamSpec) -> dict:
    return {
        "team": s.name,
        "source": str(s.source),
        "tier": s.tier,
        "flavour": s.spark.flavour,
        "workers": s.spark.workers,
        "worker_cores": s.spark.worker_cores,
        "worker_memory_gb": s.spark.worker_memory_gb,
        "cidr": str(s.cidr),
        "region": s.region,
        "kafka": [{"cluster": k.cluster, "mirrored": k.mirrored} for k in s.kafka],
        "owners": list(s.owners),
    }


def build_parser(prog: str = "python -m infra.validate") -> argparse.ArgumentParser:
    """The command line's parser (`dagger` builds it under its own name; docs/reference/commands.md)."""
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    parser.add_argument(
        "files", nargs="*", type=Path, help="team specs to validate (default: every infra/teams/*.yaml)"
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print {valid, problems, teams} as JSON (ASCII: no spec text can print a line of its own)",
    )
    return parser


@survives_closed_pipe
def main(argv: list[str] | None = None, prog: str = "python -m infra.validate") -> int:
    args = build_parser(prog).parse_args(argv)
    # What is printed goes to CI's log and the pull request's comment: each problem quotes the spec's
    # text itself (yaml_lines.shown), and every line goes out through printable() as well, so no
    # spec, file name or message can print a line of its own (a forged "OK ..."), a terminal
    # sequence, or a character stdout cannot encode.
    try:
        specs, problems = validate(args.files or None)
    except topics.CatalogueError as e:  # platform.yaml or a restricted topic's grant file
        problems, specs = [f"the platform's topic catalogue is invalid, so no spec can be checked: {e}"], []
        if not args.json:
            print(printable(problems[0]))
            return exit_codes.REFUSED
    if args.json:
        print(
            json.dumps(
                {"valid": not problems, "problems": problems, "teams": [] if problems else [as_json(s) for s in specs]},
                indent=2,
                ensure_ascii=True,
            )
        )
        return exit_codes.REFUSED if problems else exit_codes.OK
    for problem in problems:
        print(printable(problem))
    if problems:
        print(f"{len(problems)} problem(s) in the team specs", file=sys.stderr)
        return exit_codes.REFUSED
    for s in specs:
        print(printable(summary(s)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
