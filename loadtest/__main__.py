"""Load for drills: dagger load {produce,record,replay,shapes,sample} ... (each with --help)."""

from __future__ import annotations

import argparse
import sys

from dagger_runtime.closed_pipe import survives_closed_pipe
from protos.errors import SchemaError

from .settings import SettingsError
from .shapes import ShapeError


def build_parser(prog: str = "python -m loadtest") -> argparse.ArgumentParser:
    """The command line's parser (`dagger` builds it under its own name; docs/reference/commands.md);
    each command's function is its `run` default."""
    from . import producer, recording, shapes, traffic

    parser = argparse.ArgumentParser(
        prog=prog,
        description="Kafka load for drills: generated protobuf traffic with a ledger of every delivery, "
        "recordings and their replay, locust load shapes.",
        epilog="locust runs the shapes: .venv/bin/locust -f loadtest/locustfile.py --help",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    commands = {
        "produce": (
            producer.add_arguments,
            producer.run,
            "send generated messages at a rate; write a ledger of the deliveries",
        ),
        "record": (recording.add_record_arguments, recording.run_record, "read a topic into a recording file"),
        "replay": (
            recording.add_replay_arguments,
            recording.run_replay,
            "send a recording with its timing, event time moved to now",
        ),
        "shapes": (shapes.add_arguments, shapes.run, "check a load shape and print its plan and locust command"),
        "sample": (
            traffic.add_sample_arguments,
            traffic.run_sample,
            "write sample messages to a file, for preview (no Kafka)",
        ),
    }
    for name, (add, run, summary) in commands.items():
        p = sub.add_parser(
            name,
            help=summary,
            description=summary[0].upper() + summary[1:] + ".",
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        add(p)
        p.set_defaults(run=run)
    return parser


@survives_closed_pipe
def main(argv: list[str] | None = None, prog: str = "python -m loadtest") -> int:
    args = build_parser(prog).parse_args(argv)

    from .generator import HintError
    from .recording import RecordingError

    try:
        return args.run(args)
    except (SettingsError, SchemaError, HintError, RecordingError, ShapeError) as e:
        # what the user gave is wrong: say what and where, without a traceback
        print(f"{prog} {args.command}: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
