"""`make demo-preview`: sample traffic for the sample schemas, and the sample daggers previewed on
it: each example dagger under examples/daggers runs once over generated protobuf messages and its
results are printed as a table. No servers; `make demo` is the live one, on the lab.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from loadtest.traffic import write_sample

from .jvm import REPO_ROOT
from .session import build_session

EXAMPLES = REPO_ROOT / "examples" / "daggers"
BOOKING = "gojek.esb.booking.BookingLogMessage"
PING = "gojek.esb.driverlocation.DriverLocationLogMessage"
API_LOG = "gojek.esb.apilog.ApiLogMessage"
# example job -> {table: message it reads}
INPUTS = {
    "completed_bookings_by_s2.yaml": {"data_stream": BOOKING},
    "driver_supply_by_s2.yaml": {"supply_data": PING},
    "supply_per_minute.properties": {"data_stream_0": PING},
    "api_health.yaml": {"api_logs": API_LOG},
    "pings_before_completion.yaml": {"bookings": BOOKING, "pings": PING},
}


def table(rows: list[dict], limit: int, title: str):
    """The first `limit` rows as a rich Table (a caption says how many more there are)."""
    from rich.table import Table

    shown = Table(
        title=title,
        title_justify="left",
        caption=f"{len(rows) - limit} more rows" if len(rows) > limit else None,
        caption_justify="left",
    )
    for column in rows[0] if rows else {"(no rows)": None}:
        shown.add_column(column, overflow="fold")
    for row in rows[:limit]:
        shown.add_row(*(_cell(v) for v in row.values()))
    return shown


def _cell(v) -> str:
    return "null" if v is None else (f"{v:.2f}" if isinstance(v, float) else str(v))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m dagger_runtime.demo", description=__doc__.split("\n\n")[0])
    p.add_argument("--messages", type=int, default=2000, help="messages per sample stream (default 2000)")
    p.add_argument("--rows", type=int, default=8, help="result rows to show per dagger (default 8)")
    p.add_argument("--out", default=str(REPO_ROOT / "out" / "demo"), help="where the sample traffic goes")
    args = p.parse_args(argv)

    from rich.console import Console

    from protos import registry

    from .config import load_job
    from .plan import plan_job
    from .preview import run_preview

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    dset = registry.load()
    files = {}
    for message in sorted({m for tables in INPUTS.values() for m in tables.values()}):
        path = out / (message.rsplit(".", 1)[-1] + ".bin")
        write_sample(message, args.messages, path, minutes=5, descriptor_set=dset)
        files[message] = path
        print(f"[demo] wrote {args.messages} {message} messages to {path}", file=sys.stderr)

    print("[demo] starting Spark (local, loopback only)...", file=sys.stderr)
    spark = build_session("dagger-demo", parallelism=2)
    console = Console(width=None if sys.stdout.isatty() else 200)  # a file or pipe: rows unfolded
    for name, tables in INPUTS.items():
        started = time.monotonic()
        plan = plan_job(load_job(EXAMPLES / name))
        report = run_preview(plan, {t: str(files[m]) for t, m in tables.items()}, spark=spark)
        console.print(
            table(
                report.rows,
                args.rows,
                f"{plan.job.name} ({name}, {len(report.rows)} rows, {time.monotonic() - started:.1f}s)",
            )
        )
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
