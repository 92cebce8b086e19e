"""Run the corpus through both engines and print what each case gives; optionally record it.

    python -m tests.conformance.observe                 # every case: state and detail, one a line
    python -m tests.conformance.observe --only ID,ID    # some cases
    python -m tests.conformance.observe --record        # also (re)write expected.yaml's states

--record keeps the notes already written in expected.yaml for cases whose state (and refusal) has not changed,
and fills in the rest from the observation (the refusal's first line; the difference as seen): a
note so filled says "(observed)" until someone reads and rewrites it.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import yaml

from dagger_runtime.session import build_session
from dagger_runtime.udfs import register_all
from tests.conformance import harness
from tests.conformance.corpus import CASES

EXPECTED = Path(__file__).with_name("expected.yaml")


def load_expected() -> dict[str, dict]:
    return yaml.safe_load(EXPECTED.read_text()) if EXPECTED.exists() else {}


def observe_all(cases, log=sys.stderr) -> dict[str, tuple[str, str]]:
    from protos import registry

    with tempfile.TemporaryDirectory() as tmp:
        inputs = harness.write_inputs(Path(tmp))
        started = time.monotonic()
        flink = harness.run_flink(cases, inputs)
        print(f"flink: {len(cases)} cases in {time.monotonic() - started:.0f}s", file=log)
        spark = build_session("conformance", parallelism=2)
        register_all(spark)
        dset = registry.load(None, harness.SCHEMA_VERSION)
        out = {}
        started = time.monotonic()
        for c in cases:
            out[c.id] = harness.observe(c, flink[c.id], harness.run_ours(c, inputs, spark, dset))
            print(f"{c.id:24} {out[c.id][0]:10} {out[c.id][1][:200]!r}", file=log)
        print(f"ours: {len(cases)} cases in {time.monotonic() - started:.0f}s", file=log)
        spark.stop()
    return out


def refusal_words(message: str) -> str:
    """The part of a refusal worth asserting: its first line, without the position prefix."""
    line = message.strip().splitlines()[0]
    if line.startswith("SQL line") and ": " in line:
        line = line.split(": ", 1)[1]
    return line.split("; did you mean")[0][:160]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.conformance.observe")
    p.add_argument("--only", help="comma-separated case ids")
    p.add_argument("--record", action="store_true", help="write the observed states into expected.yaml")
    p.add_argument("--json", help="also write the observations to this file")
    args = p.parse_args(argv)
    cases = [c for c in CASES if not args.only or c.id in args.only.split(",")]
    seen = observe_all(cases)
    if args.json:
        Path(args.json).write_text(json.dumps(seen, indent=1))
    if args.record:
        expected = load_expected()
        for c in cases:
            state, detail = seen[c.id]
            old = expected.get(c.id, {})
            if old.get("state") == state and (state != "refused" or old.get("refusal", "\0") in detail):
                continue  # unchanged: its written note stays
            entry = {"state": state}
            if state == "refused":
                entry["refusal"] = refusal_words(detail)
            elif state == "differs":
                entry["reason"] = f"(observed) {detail[:400]}"
            expected[c.id] = entry
        order = [c.id for c in CASES]
        expected = {k: expected[k] for k in sorted(expected, key=lambda k: order.index(k) if k in order else 10**6)}
        EXPECTED.write_text(yaml.safe_dump(expected, sort_keys=False, width=110, allow_unicode=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
