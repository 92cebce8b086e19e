"""The two engines of the conformance suite, over the same generated messages.

Flink: `jvm/flink`'s runner (`make flink` builds it), one JVM for every case.
Ours:  the path `dagger preview` takes over a file (`run_preview`), on one Spark session.

Both give a list of rows as JSON-ready dicts (timestamps ISO-8601 UTC); `compare` tells whether
the two are the same multiset, floats to a relative tolerance of REL_TOL.
"""

from __future__ import annotations

import io
import json
import math
import os
import subprocess
import tempfile
import textwrap
from dataclasses import dataclass
from pathlib import Path

from dagger_runtime.errors import DaggerError
from dagger_runtime.inputs import write_delimited
from loadtest import traffic

ROOT = Path(__file__).resolve().parents[2]
FLINK_DIR = ROOT / ".jvm" / "flink"
REL_TOL = 1e-9  # floats: relative tolerance (and ABS_TOL around zero)
ABS_TOL = 1e-12
SCHEMA_VERSION = "4957b56c57da625e"
DESCRIPTOR_SET = ROOT / "protos" / "descriptors" / f"{SCHEMA_VERSION}.desc"

# The streams a case can read: table name -> (message, generator, count, minutes, seed).
STREAMS = {
    "bookings": ("gojek.esb.booking.BookingLogMessage", "bookings", 400, 4, 21),
    "pings": ("gojek.esb.driverlocation.DriverLocationLogMessage", "driver_pings", 600, 4, 22),
    "api_logs": ("gojek.esb.apilog.ApiLogMessage", "api_logs", 400, 4, 23),
}
EVENT_TIME = "event_timestamp"


def write_inputs(directory: Path) -> dict[str, Path]:
    """One file of length-delimited messages per stream (loadtest's generators, fixed seeds)."""
    from protos import registry

    dset = registry.load(None, SCHEMA_VERSION)
    paths = {}
    for table, (message, generator, n, minutes, seed) in STREAMS.items():
        paths[table] = directory / f"{table}.bin"
        events = getattr(traffic, generator)(n, minutes=minutes, seed=seed)
        write_delimited(traffic.encode(events, dset.message_class(message)), paths[table])
    return paths


# ----------------------------------------------------------------------------------- Flink


def flink_available() -> bool:
    return (FLINK_DIR / "conformance-runner.jar").exists() and (FLINK_DIR / "deps").is_dir()


def run_flink(cases, inputs: dict[str, Path], timeout: float = 1800) -> dict[str, dict]:
    """Every case on Flink in one JVM: {case id: {"rows": [...]} or {"error": "..."}}."""
    spec = {
        "descriptor_set": str(DESCRIPTOR_SET),
        "cases": [
            {
                "id": c.id,
                "query": c.query,
                "tables": [
                    {
                        "name": t,
                        "input_file": str(inputs[t]),
                        "message": STREAMS[t][0],
                        "event_time_field": EVENT_TIME,
                        "watermark_delay_ms": c.watermark_delay_ms,
                    }
                    for t in c.tables
                ],
            }
            for c in cases
        ],
    }
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(spec, f)
    try:
        proc = subprocess.run(
            [
                "java",
                "-Xmx2g",
                "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1",
                f"-Dlog4j.configurationFile={ROOT / 'jvm' / 'flink' / 'log4j2.properties'}",
                "-cp",
                f"{FLINK_DIR / 'conformance-runner.jar'}{os.pathsep}{FLINK_DIR / 'deps' / '*'}",
                "dev.daggers.conformance.FlinkRunner",
                f.name,
            ],
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=ROOT,
        )
    finally:
        os.unlink(f.name)
    if proc.returncode != 0:
        raise RuntimeError(f"the Flink runner exited {proc.returncode}:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    out = {}
    for line in proc.stdout.splitlines():
        result = json.loads(line)
        out[result.pop("id")] = result
    return out


# ----------------------------------------------------------------------------------- ours


@dataclass
class Ours:
    rows: list[dict] | None = None
    refusal: str | None = None  # a DaggerError: a refusal, said to the analyst
    crash: str | None = None  # anything else: a traceback the analyst would see


def job_yaml(case) -> str:
    streams = "\n".join(
        f"  - {{table: {t}, proto: {STREAMS[t][0]}, topics: [{t}], event_time: {EVENT_TIME},"
        f" kafka: {{cluster: c, bootstrap_servers: 127.0.0.1:9092, group_id: g}}}}"
        for t in case.tables
    )
    return (
        f"name: conformance\nteam: conformance\nstreams:\n{streams}\n"
        f"sql: |\n{textwrap.indent(case.query, '  ')}\n"
        f"watermark_delay_ms: {case.watermark_delay_ms}\n"
        f"schema: {{version: {SCHEMA_VERSION}}}\nsink: {{type: log}}\n"
    )


def run_ours(case, inputs: dict[str, Path], spark, dset) -> Ours:
    """The case through `dagger preview`'s own path: config, plan, validate's checks, the query."""
    from dagger_runtime.config import loads_job
    from dagger_runtime.plan import plan_job
    from dagger_runtime.preview import run_preview

    try:
        plan = plan_job(loads_job(job_yaml(case), fmt="yaml", source="conformance.yaml"), dset)
        report = run_preview(plan, {t: str(inputs[t]) for t in case.tables}, spark=spark, log=io.StringIO())
        return Ours(rows=report.rows)
    except DaggerError as e:
        return Ours(refusal=str(e))
    except Exception as e:  # noqa: BLE001 - recorded as what the analyst would see
        return Ours(crash=f"{type(e).__name__}: {str(e)[:500]}")


# ----------------------------------------------------------------------------------- compare


def _norm(value):
    """Comparable form: floats rounded to ~12 significant digits for sorting (compared with
    tolerance after), timestamps as given (both sides print ISO-8601 UTC the same way)."""
    if isinstance(value, dict):
        return tuple((k, _norm(v)) for k, v in value.items())
    if isinstance(value, list):
        return tuple(_norm(v) for v in value)
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, (int, float)):
        return ("n", float(f"{value:.9g}"))
    return ("s", str(value)) if value is not None else ("z",)


def _close(a, b) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=ABS_TOL)
    return a == b


def _row_key(row: dict):
    return tuple(_norm(v) for v in row.values())


def compare(flink_rows: list[dict], our_rows: list[dict]) -> str | None:
    """None when the two are the same multiset of rows; else what differs, in a sentence.
    Column names must match (in order); values to REL_TOL."""
    if flink_rows and our_rows and list(flink_rows[0]) != list(our_rows[0]):
        return f"columns differ: Flink {list(flink_rows[0])}, ours {list(our_rows[0])}"
    if len(flink_rows) != len(our_rows):
        return f"{len(flink_rows)} rows on Flink, {len(our_rows)} ours"
    a = sorted(flink_rows, key=_row_key)
    b = sorted(our_rows, key=_row_key)
    for x, y in zip(a, b):
        if not _close(x, y):
            cols = [k for k in x if not _close(x.get(k), y.get(k))]
            return (
                f"values differ in {', '.join(cols)}: Flink {json.dumps(x, default=str)[:300]}, "
                f"ours {json.dumps(y, default=str)[:300]}"
            )
    return None


def observe(case, flink: dict, ours: Ours) -> tuple[str, str]:
    """(state, detail): identical, refused (ours said why) or differs (and how)."""
    if ours.refusal is not None:
        return "refused", ours.refusal
    if ours.crash is not None:
        return "differs", f"ours crashed: {ours.crash}"
    if "error" in flink:
        return "differs", f"Flink refuses ({flink['error'][:300]}) while ours gives {len(ours.rows)} rows"
    diff = compare(flink["rows"], ours.rows)
    return ("identical", f"{len(ours.rows)} rows") if diff is None else ("differs", diff)
