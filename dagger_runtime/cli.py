"""`python -m dagger_runtime` (also installed as `dagger`): validate and preview daggers."""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import sys
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as installed

from . import exit_codes
from .closed_pipe import survives_closed_pipe
from .errors import DaggerError, QueryError
from .source import checked_starting
from .warm.cli import add_command
from .warm.client import forward
from .warm.wire import COMMANDS

EXIT_USER_ERROR = exit_codes.REFUSED


def _load_plan(args):
    """Load the job, say its warnings (every command does), refuse them under --strict, plan it."""
    from .config import ConfigError, load_job
    from .plan import plan_job

    job = load_job(args.job)
    plan = plan_job(job)
    warnings = list(job.warnings) + plan.warnings()
    if warnings and args.strict:
        raise ConfigError([f"{w} (an error under --strict)" for w in warnings], source=args.job)
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return plan


def cmd_validate(args) -> int:
    if not args.json:
        return _validate(args)
    # --json: always one JSON document on stdout, an invalid job's included; the message on stderr too
    try:
        return _validate(args)
    except DaggerError as e:
        print(json.dumps({"job": args.job, "valid": False, "errors": error_items(e)}, indent=2))
        raise


def error_items(e: DaggerError) -> list[dict]:
    """A refusal as data: each problem's message, and where it is when known."""
    from .config import ConfigError

    if isinstance(e, ConfigError):
        return [{"kind": "config", "message": p} for p in e.problems]
    if isinstance(e, QueryError):
        return [{"kind": "sql", "message": e.reason, "line": e.line, "column": e.col}]
    return [{"kind": "job", "message": str(e)}]


def sink_target(sink) -> dict:
    """Where the results go, without a secret: the sink's type and what it names."""
    if sink.type == "influx":
        return {
            "type": "influx",
            "url": sink.influx.url,
            "database": sink.influx.db_name,
            "measurement": sink.influx.measurement_name,
        }
    if sink.type == "kafka":
        return {
            "type": "kafka",
            "brokers": sink.kafka.brokers,
            "topic": sink.kafka.topic,
            "data_type": sink.kafka.data_type,
            "proto_message": sink.kafka.proto_message,
        }
    if sink.type == "postgres":
        return {"type": "postgres", "url": sink.postgres.url, "table": sink.postgres.table}
    return {"type": sink.type}


# what only Spark's analysis of the query finds, which `validate --no-spark` leaves out
NOT_CHECKED_WITHOUT_SPARK = [
    "the query's columns and their types against the messages' fields",
    "the output columns against the sink",
]


def _validate(args) -> int:
    plan = _load_plan(args)
    columns = None
    if not args.no_spark:
        from .sinks import check_sink
        from .validate import analyze

        columns = analyze(plan)
        check_sink(plan, columns)
    job = plan.job
    info = {
        "job": job.name,
        "valid": True,
        "schema_version": plan.descriptor_set.digest,
        "streams": [
            {
                "table": s.table,
                "proto": s.proto_class,
                "proto_as_written": s.proto_as_written,
                "event_time": s.event_time_field,
                "topics": list(spec.topics),
                "topic_pattern": spec.topic_pattern,
                "bootstrap_servers": spec.kafka.bootstrap_servers,
                "group_id": spec.kafka.group_id,
                "auto_offset_reset": spec.kafka.auto_offset_reset,
            }
            for s, spec in zip(plan.streams, job.streams)
        ],
        "windows": [{"kind": w.kind, "size": w.size.spark()} for w in plan.query.windows],
        "sink": sink_target(job.sink),
        "parallelism": job.parallelism,
        "spark_sql": plan.query.spark_sql,
        "warnings": list(job.warnings),
        "not_checked": [] if columns is not None else NOT_CHECKED_WITHOUT_SPARK,
    }
    if columns is not None:
        info["columns"] = columns
    if args.json:
        print(json.dumps(info, indent=2))
    else:
        print(
            f"{job.name}: valid"
            if columns is not None
            else f"{job.name}: valid as far as checked (--no-spark: not checked: {', '.join(NOT_CHECKED_WITHOUT_SPARK)})"
        )
        print(
            f"  schema version  {info['schema_version']}"
            + ("" if job.schema.version else "  (not pinned: add it to the job to lock it)")
        )
        for s in info["streams"]:
            topics = ", ".join(s["topics"]) or f"topics matching {s['topic_pattern']}"
            java = f" (the Java class {s['proto_as_written']})" if s["proto_as_written"] != s["proto"] else ""
            print(f"  stream          {s['table']} <- {s['proto']}{java} (rowtime from {s['event_time']})")
            print(
                f"                  from {topics} on {s['bootstrap_servers']}, group {s['group_id'] or '-'}, "
                f"{s['auto_offset_reset']} when new"
            )
        for w in info["windows"]:
            print(f"  window          {w['kind']} {w['size']}")
        if columns is not None:
            print("  output          " + ", ".join(f"{c['name']} {c['type']}" for c in columns))
        sink = info["sink"]
        print("  sink            " + " ".join(f"{k}={v}" for k, v in sink.items() if v is not None))
        print(f"  parallelism     {info['parallelism']}")
    return 0


def cmd_preview(args) -> int:
    from .preview import parse_inputs, print_rows, run_preview

    plan = _load_plan(args)
    paths = parse_inputs(args.input, plan)
    report = run_preview(plan, paths, rejected_dir=args.rejected)
    print_rows(report.rows)
    return 0


def cmd_run(args) -> int:
    from .lease import Fenced
    from .run import RunOptions, run

    plan = _load_plan(args)
    options = RunOptions(
        checkpoint=args.checkpoint,
        available_now=args.available_now,
        master=args.master,
        log_path=args.log,
        metrics_port=args.metrics_port,
        metrics_addr=args.metrics_addr,
        starting=_starting(args.starting, plan),
        emit_after_ms=args.emit_windows_after,
        version=args.dagger_version,
        standby=args.standby,
    )
    try:
        return run(plan, options)
    except Fenced as e:
        # 0: a supervised driver that ends well is not started again
        print(f"run: {e}", file=sys.stderr)
        return 0


def _starting(text: str | None, plan) -> dict | None:
    """--starting: {"<table>": {"startingOffsets"|"startingTimestamp": value}} (what `deploy` and
    `edit` pass for a new checkpoint)."""
    if not text:
        return None
    try:
        value = json.loads(text)
    except ValueError as e:
        raise DaggerError(f"--starting is not JSON: {e}") from None
    return checked_starting(value, plan, "--starting")


def _add_strict(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--strict", action="store_true", help="treat the job file's warnings (unknown or ignored keys) as errors"
    )


def _add_no_warm(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--no-warm", action="store_true", help="start a Spark of its own even when a warm one (`warm start`) is running"
    )


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="dagger",
        description="Run daggers: SQL aggregations over Kafka topics of protobuf messages, on Spark; and the "
        "platform around them (the lab, drills, faults, load, schemas, team platforms).",
        epilog="`dagger GROUP --help` for each of " + ", ".join(GROUPS) + ".",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="log debug details to stderr")
    p.add_argument("--version", action="version", version=f"dagger {version()}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (_, what) in GROUPS.items():  # run by main before this parser; listed for --help
        sub.add_parser(name, help=what, add_help=False)

    v = sub.add_parser(
        "validate",
        help="check a job's config, schema and SQL without running it",
        description="Check config, schema and SQL. Exits 2 with the problem named when "
        "something is wrong. Nothing runs: Spark only analyses the query.",
    )
    v.add_argument("job", metavar="JOB", help="a native YAML job spec or a raystack/dagger .properties file")
    v.add_argument(
        "--no-spark", action="store_true", help="skip Spark's analysis of column names and types (faster, weaker)"
    )
    v.add_argument("--json", action="store_true", help="print the result as JSON")
    _add_strict(v)
    _add_no_warm(v)
    v.set_defaults(func=cmd_validate)

    pv = sub.add_parser(
        "preview",
        help="run the job's query once over messages read from files",
        description="Run the query once over messages from files instead of Kafka, close "
        "every window at the end of the input and print one JSON object per "
        "result row on stdout. Messages that do not parse are reported on "
        "stderr with their position and left out.",
    )
    pv.add_argument("job", metavar="JOB", help="a native YAML job spec or a raystack/dagger .properties file")
    pv.add_argument(
        "--input",
        "-i",
        action="append",
        default=[],
        metavar="TABLE=PATH",
        help="messages for one stream table: length-delimited protobuf (writeDelimitedTo), "
        "or proto3 JSON lines if PATH ends in .jsonl; repeat per table",
    )
    pv.add_argument(
        "--rejected",
        metavar="DIR",
        help="also keep every message set aside in DIR/<table>.rejected.jsonl: its position, "
        "reason and bytes (base64), so nothing is lost",
    )
    _add_strict(pv)
    _add_no_warm(pv)
    pv.set_defaults(func=cmd_preview)

    r = sub.add_parser(
        "run",
        help="run the job on Kafka until stopped (or, with --available-now, over what the topics hold)",
        description="Run the job as a Spark Structured Streaming query on its Kafka topics and "
        "write each window once, when the watermark passes its end. Messages that "
        "cannot become rows go to the dead-letter topic. Ctrl-C (SIGINT) or "
        "SIGTERM finishes the current batch and stops; a restart resumes from "
        "the checkpoint.",
    )
    r.add_argument("job", metavar="JOB", help="a native YAML job spec or a raystack/dagger .properties file")
    r.add_argument(
        "--checkpoint",
        metavar="DIR",
        help="where the job keeps its offsets and open windows (default: the job's "
        "checkpoint_location); keep it to resume where the job stopped",
    )
    r.add_argument(
        "--available-now",
        action="store_true",
        help="process what the topics hold at start, write every window the watermark has "
        "passed, then exit 0 (backfills, CI)",
    )
    r.add_argument(
        "--master",
        metavar="URL",
        help="Spark master, as spark-submit's --master (default: local[parallelism], or $DAGGER_SPARK_MASTER)",
    )
    r.add_argument("--log", metavar="FILE", help="append one JSON line per batch to FILE")
    r.add_argument("--metrics-port", type=int, metavar="PORT", help="serve Prometheus metrics on ADDR:PORT/metrics")
    r.add_argument(
        "--metrics-addr",
        default="127.0.0.1",
        metavar="ADDR",
        help="the address to serve metrics on (default 127.0.0.1)",
    )
    r.add_argument(
        "--starting",
        metavar="JSON",
        help='where a new checkpoint starts reading, per stream: {"TABLE": {"startingOffsets": '
        '"earliest"|"latest"|"{"topic":{"0":42}}"}} or {"TABLE": {"startingTimestamp": '
        '"EPOCH_MS"}}; ignored when the checkpoint already holds offsets (deploy and edit '
        "set it)",
    )
    r.add_argument(
        "--emit-windows-after",
        type=int,
        metavar="EPOCH_MS",
        help="write only the windows that end after this time: a version that replays its "
        "input from before its open windows then leaves the windows the previous version "
        "wrote as they are (`dagger failover` sets it)",
    )
    r.add_argument(
        "--dagger-version",
        type=int,
        metavar="N",
        help="the registry's version this driver runs: it ends without writing once the checkpoint's "
        "fence names a later one (deploy, edit and stop write the fence; deploy sets this)",
    )
    r.add_argument(
        "--standby",
        action="store_true",
        help="start as a standby: wait with the Spark session up until this version's first driver "
        "has taken the checkpoint's lease, then take it when that driver is gone (deploy "
        "--standby CLUSTER sets it)",
    )
    _add_strict(r)
    r.set_defaults(func=cmd_run)

    add_command(sub, commands=sys.modules[__name__])  # the warm process runs its commands with this module

    from .lifecycle.cli import add_commands

    add_commands(sub)
    return p


# The platform's other command lines, as groups of `dagger` (each keeps its `python -m` form):
# name -> (the module whose main it runs, or a group of its own, and what it is for). Imported
# when asked for, so `dagger run` loads none of them (`team` needs Pulumi's packages, the runtime
# does not).
TEAM_COMMANDS = {
    "validate": ("infra.validate", "check every team spec (or those named) and the platform's catalogue"),
    "plan": ("infra.plan", "what a team's stack declares, under Pulumi's mocks (no cloud)"),
    "codeowners": ("infra.codeowners", "write or check .github/CODEOWNERS from the specs"),
    "inventory": ("infra.inventory_export", "a team stack's Ansible inventory from its outputs"),
}
GROUPS = {
    "lab": ("lab.cli", "the lab: every server of the platform on this machine (up, status, down)"),
    "drill": ("chaos.cli", "chaos and failover drills on the lab: list, validate, plan, run, history"),
    "faults": ("chaos.faults.cli", "one fault on the lab: inject it, keep it, undo it"),
    "load": ("loadtest.__main__", "traffic for drills: generate, produce at a rate, record, replay"),
    "protos": ("protos.__main__", "schemas: compile, check compatibility, list versions, show a message"),
    "team": (TEAM_COMMANDS, "a team's platform spec: validate, plan, codeowners, inventory"),
    "bench": ("bench.__main__", "throughput of the hot paths against the machine's limits"),
}


def version() -> str:
    try:
        return installed("daggers")
    except PackageNotFoundError:  # a checkout run without installing it
        return "unknown"


def _group(path: list[str], target, argv: list[str]) -> int:
    """`dagger <path...> argv`: a module's main under its dagger name, or one more level of groups."""
    if argv[:1] == ["--version"]:
        print(f"dagger {version()}")
        return 0
    prog = "dagger " + " ".join(path)
    if isinstance(target, str):
        return importlib.import_module(target).main(argv, prog=prog)
    if argv and argv[0] in target:
        return _group([*path, argv[0]], target[argv[0]][0], argv[1:])
    asked = argv[:1] in (["-h"], ["--help"])
    print(
        f"usage: {prog} {{{','.join(target)}}} ...\n\n{GROUPS[path[0]][1]}:\n"
        + "".join(f"  {c:<11} {h}\n" for c, (_, h) in target.items()),
        file=sys.stdout if asked else sys.stderr,
        end="",
    )
    return 0 if asked else EXIT_USER_ERROR


@survives_closed_pipe
def main(argv: list[str] | None = None, *, warm: bool = True) -> int:
    """warm=False: run here even when a warm process answers (the warm process itself)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in GROUPS:
        return _group(argv[:1], GROUPS[argv[0]][0], argv[1:])
    args = build_parser().parse_args(argv)
    if warm and uses_warm(args):
        code = forward(argv)
        if code is not None:
            return code
    return run_command(args)


def uses_warm(args) -> bool:
    """validate (with Spark) and preview go to the warm process when one answers."""
    return args.command in COMMANDS and not args.no_warm and not getattr(args, "no_spark", False)


def run_command(args) -> int:
    # force: the warm process runs many commands, each with its own stderr
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        stream=sys.stderr,
        format="%(levelname)s %(name)s: %(message)s",
        force=True,
    )
    try:
        return args.func(args)
    except DaggerError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `preview ... | head`: the reader left; not an error
        sys.stderr.close()
        return 0
