"""PREVIEW: run a dagger's query once over messages from files, close every window, print rows.

stdout carries one JSON object per result row and nothing else; progress and the messages set
aside go to stderr, so `preview ... | jq` works.
"""

from __future__ import annotations

import base64
import json
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from google.protobuf.message import DecodeError
from google.protobuf.unknown_fields import UnknownFieldSet

from . import inputs
from .errors import DaggerError
from .output import dumps, rows_as_dicts, sort_key
from .plan import JobPlan
from .session import build_session
from .streams import decode
from .validate import analyze, checked_query


@dataclass
class PreviewReport:
    rows: list[dict]
    read: dict[str, int] = field(default_factory=dict)
    rejected: dict[str, list[tuple[int, int, str]]] = field(default_factory=dict)


def parse_inputs(pairs: list[str], plan: JobPlan) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in pairs:
        table, sep, path = pair.partition("=")
        if not sep or not table or not path:
            raise DaggerError(f"--input {pair!r}: expected TABLE=PATH")
        stream = plan.stream(table)
        if stream.table in out:
            raise DaggerError(f"--input {pair!r}: table {stream.table} given twice")
        out[stream.table] = path
    missing = [t for t in plan.query.tables if t not in out and t.lower() not in {k.lower() for k in out}]
    if missing:
        raise DaggerError(
            f"the query reads {', '.join(missing)} but no --input was given for it (use --input {missing[0]}=PATH)"
        )
    return out


SKIPPED_SHOWN = 10  # skipped messages said one by one; the rest are counted
MIN_DECODED_SHARE = 0.1  # fewer decoded than this share of a file: the wrong file, not bad messages
TYPE_SAMPLE = 200  # messages read again in Python to tell a file of another message type


def run_preview(
    plan: JobPlan, input_paths: dict[str, str], spark=None, log=None, rejected_dir: str | None = None
) -> PreviewReport:
    log = log or sys.stderr  # looked up now: the warm process points it at each command's client

    if spark is None:
        spark = build_session(f"preview-{plan.job.name}", parallelism=min(plan.job.parallelism, 2), short_lived=True)
    # validate's checks, with validate's messages, before a single message is read or decoded
    analyze(plan, spark)
    records = {table: inputs.read_input(path) for table, path in input_paths.items()}
    report = PreviewReport(rows=[])
    for table, recs in records.items():
        bad = _register_table(spark, plan, table, input_paths[table], recs, log)
        report.read[table] = len(recs)
        report.rejected[table] = bad
        if rejected_dir and bad:
            _keep_rejected(Path(rejected_dir), table, recs, bad, log)
    started = time.monotonic()
    rows = rows_as_dicts(checked_query(spark, plan))
    if not plan.query.ordered:
        rows.sort(key=sort_key)
    report.rows = rows
    print(f"preview: {len(rows)} result rows in {time.monotonic() - started:.1f}s", file=log)
    return report


def _register_table(spark, plan: JobPlan, table: str, path: str, recs: list[inputs.Record], log) -> list:
    """Decode one input file into the stream's table; report and return the messages set aside."""

    import pandas as pd

    stream = plan.stream(table)
    # the file's format wins: a .jsonl file holds proto3 JSON whatever the stream's Kafka format
    if inputs.is_json(path):
        stream = replace(stream, data_type="JSON")
    good = [r for r in recs if r.value is not None]
    if stream.data_type == "PROTO":
        _refuse_another_type(
            table, path, stream.proto_class, [r.value for r in good[:TYPE_SAMPLE]], plan.descriptor_set, log
        )
    schema = "position long, offset long, value binary"
    pdf = pd.DataFrame(
        {"position": [r.position for r in good], "offset": [r.offset for r in good], "value": [r.value for r in good]}
    )
    raw = spark.createDataFrame(pdf, schema=schema) if good else spark.createDataFrame([], schema)
    decoded_table, rejected, decoded = decode(spark, raw, stream, plan.descriptor_set, keep=("position", "offset"))
    decoded.cache()  # decoded once, read twice (the table and the rejected messages)
    bad = [(r["position"], r["offset"], r["reason"]) for r in rejected.collect()]
    bad = sorted(bad + [(r.position, r.offset, r.error) for r in recs if r.value is None])
    unit = "line" if inputs.is_json(path) else "byte"
    for position, offset, reason in bad[:SKIPPED_SHOWN]:
        print(f"preview: {table}: {path}: message {position} ({unit} {offset}) skipped: {reason}", file=log)
    if len(bad) > SKIPPED_SHOWN:
        print(
            f"preview: {table}: ... and {len(bad) - SKIPPED_SHOWN} more skipped (--rejected DIR keeps them all)",
            file=log,
        )
    decoded = len(recs) - len(bad)
    if recs and decoded < len(recs) * MIN_DECODED_SHARE:
        kind = "proto3 JSON" if inputs.is_json(path) else "length-delimited protobuf"
        raise DaggerError(
            f"{table}: {decoded} of the {len(recs)} messages in {path} decoded as {stream.proto_class} "
            f"({kind}); the first was skipped with: {bad[0][2]}. Is it a file of another message type? "
            f"`python -m protos show {stream.proto_class}` lists the fields this stream expects"
        )
    decoded_table.createOrReplaceTempView(stream.table)
    print(f"preview: {table}: {len(recs)} messages read, {decoded} decoded, {len(bad)} skipped", file=log)
    return bad


def _refuse_another_type(table: str, path: str, expected: str, sample: list[bytes], dset, log) -> None:
    """Protobuf parses most bytes as most messages, so a file of another type is not skipped: it
    decodes into nonsense and the query finds nothing. Its sign: the messages carry fields the
    expected type does not have (a producer on a newer schema does too, so that alone is only
    said), while another message type of the descriptor set reads them all without one."""

    def strangers(message: str) -> int | None:
        """How many sampled messages carry unknown fields as `message`; None if one does not parse."""
        cls = dset.message_class(message)
        count = 0
        for value in sample:
            try:
                count += bool(len(UnknownFieldSet(cls.FromString(value))))
            except DecodeError:
                return None
        return count

    if len(sample) < 5:
        return
    unknown = strangers(expected)
    if unknown is None or unknown < len(sample) * 0.9:
        return
    fits = [m for m in dset.messages() if m != expected and strangers(m) == 0]
    if not fits:
        print(
            f"preview: {table}: {unknown} of the first {len(sample)} messages carry fields {expected} does not "
            "have (a newer schema?)",
            file=log,
        )
        return
    raise DaggerError(
        f"{table}: the messages in {path} do not look like {expected}: {unknown} of the first {len(sample)} "
        f"carry fields it does not have, while they read as {' or '.join(fits[:3])} without any. Is it a file "
        f"of another message type? `python -m protos show {expected}` lists the fields this stream expects"
    )


def _keep_rejected(directory: Path, table: str, recs: list[inputs.Record], bad: list, log) -> None:
    """Every message set aside, with its reason and its bytes exactly as read, one JSON per line."""
    directory.mkdir(parents=True, exist_ok=True)
    by_position = {r.position: r for r in recs}
    path = directory / f"{table}.rejected.jsonl"
    with path.open("w") as out:
        for position, offset, reason in bad:
            rec = by_position[position]
            raw = rec.value if rec.value is not None else rec.rest or b""
            out.write(
                json.dumps(
                    {
                        "table": table,
                        "position": position,
                        "offset": offset,
                        "reason": reason,
                        "value_base64": base64.b64encode(raw).decode("ascii"),
                    }
                )
                + "\n"
            )
    print(f"preview: {table}: {len(bad)} messages set aside kept in {path}", file=log)


def print_rows(rows: list[dict], out=None) -> None:
    out = out or sys.stdout
    for row in rows:
        out.write(dumps(row) + "\n")
    out.flush()
