"""Where `make bench`'s figures go: bench/results/latest.json (the last run, whole) and
bench/results/history.jsonl (one JSON line a run, with its commit and time). `python -m bench`
writes the first; `python -m bench.scaling` adds the lab's figures to it and appends the line."""

from __future__ import annotations

import argparse
import datetime as dt
import json
from pathlib import Path

from bench.commands import commit

RESULTS = Path(__file__).resolve().parent / "results"
LATEST = RESULTS / "latest.json"
HISTORY = RESULTS / "history.jsonl"


def add_history_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--history",
        default=str(HISTORY),
        metavar="PATH",
        help="the JSON line, with the commit and time, is appended here (default: bench/results/history.jsonl; "
        "'' for none)",
    )


def append(path: str | Path, summary: dict) -> None:
    """The run's summary as one line of the history, with the commit and the time (UTC)."""
    at = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    with Path(path).open("a") as history:
        history.write(json.dumps({"commit": commit(), "at": at, **summary}) + "\n")
