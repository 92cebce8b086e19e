"""Where the surge dagger's time goes on Kafka: CPU seconds per process (the Spark JVM, the
broker, Python workers) and the Spark JVM's hottest methods, sampled by Java Flight Recorder.

    python -m bench.profile [-n MESSAGES] [--top N] [--jfr FILE]

One run of `run --available-now` over a pre-loaded topic, after one unrecorded warm-up run.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from dagger_runtime.session import build_session
from dagger_runtime.udfs import register_all

REPO = Path(__file__).resolve().parent.parent


def cpu_ticks(driver_pid: int) -> dict[int, tuple[str, int]]:
    """Per process: its role and CPU ticks so far, reaped children included (Linux /proc)."""
    out = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        ticks = sum(int(f) for f in fields[11:15])
        role = (
            "kafka broker"
            if "kafka.Kafka" in cmd
            else "spark jvm"
            if "java" in cmd and "pyspark-shell" in cmd
            else "python workers"
            if "pyspark.daemon" in cmd or "pyspark.worker" in cmd
            else "driver python"
            if int(entry.name) == driver_pid
            else None
        )
        if role:
            out[int(entry.name)] = (role, ticks)
    return out


# the part of the pipeline an innermost frame belongs to, by its class's prefix (first match wins)
PARTS = (
    ("decoding (WireReader, protobuf)", ("dev.daggers.runtime.", "com.google.protobuf.")),
    (
        "row conversion into Spark",
        (
            "org.apache.spark.sql.catalyst.CatalystTypeConverters",
            "org.apache.spark.unsafe.",
            "org.apache.spark.sql.catalyst.expressions.codegen.Unsafe",
            "org.apache.spark.sql.catalyst.expressions.UnsafeRow",
        ),
    ),
    ("Kafka client (fetch, records)", ("org.apache.kafka.", "org.apache.spark.sql.kafka010.")),
    ("Spark generated code and operators", ("org.apache.spark.sql.", "org.apache.spark.")),
    ("class loading", ("java.util.zip.", "java.util.jar.", "jdk.internal.loader.", "java.lang.ClassLoader")),
)
_LIBRARY = ("java.", "scala.", "jdk.", "sun.")  # attributed to the first caller outside them


def samples(jfr: Path) -> list[list[str]]:
    """The stack (innermost first) of each execution sample in the recording."""
    text = subprocess.run(
        ["jfr", "print", "--stack-depth", "64", "--events", "jdk.ExecutionSample", str(jfr)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    stacks = (re.findall(r"^\s+([\w.$<>]+)\(", sample, re.M) for sample in text.split("jdk.ExecutionSample")[1:])
    return [s for s in stacks if s]


def shares(names: list[str], key) -> list[tuple[float, str]]:
    counts = collections.Counter(key(n) for n in names)
    return [(100 * n / max(len(names), 1), k) for k, n in counts.most_common()]


def part_of(stack: list[str]) -> str:
    """The part a sample is spent in: its innermost frame's, or for JDK and Scala library code
    (collections, buffers, strings), that of the first caller outside the libraries."""
    for method in stack:
        if method.startswith(_LIBRARY) and not method.startswith(PARTS[-1][1]):
            continue
        return next((part for part, prefixes in PARTS if method.startswith(prefixes)), "other")
    return "other"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.profile", description=__doc__.split("\n\n")[0])
    p.add_argument("-n", "--messages", type=int, default=2_000_000, help="bookings pre-loaded (default 2000000)")
    p.add_argument("--top", type=int, default=20, help="methods to list (default 20)")
    p.add_argument("--jfr", default=None, help="keep the flight recording here (default: a temporary file)")
    args = p.parse_args(argv)

    from bench.kafka import TOPIC, NoopSink, dagger_once, on_topic
    from dagger_runtime.config import load_job
    from dagger_runtime.plan import plan_job
    from lab.kafka import KafkaBroker
    from loadtest.feeder import feed

    spark = build_session("dagger-profile", parallelism=os.cpu_count() or 2)
    register_all(spark)
    from protos import registry

    plan = plan_job(load_job(REPO / "examples" / "daggers" / "completed_bookings_by_s2.yaml"), registry.load())
    work = Path(tempfile.mkdtemp(prefix="dagger-profile-"))
    jfr = Path(args.jfr or work / "dagger.jfr").resolve()
    jvm = spark._jvm
    with KafkaBroker(work / "kafka") as kafka:
        kafka.create_topic(TOPIC, partitions=2)
        feed(spark, kafka.bootstrap_servers, TOPIC, args.messages)
        kplan = on_topic(plan, kafka.bootstrap_servers, TOPIC)
        print(f"[profile] warm-up run: {dagger_once(spark, kplan, work / 'ck', NoopSink):.1f}s", file=sys.stderr)
        recording = jvm.jdk.jfr.Recording(jvm.jdk.jfr.Configuration.getConfiguration("default"))
        recording.start()
        before = cpu_ticks(os.getpid())
        seconds = dagger_once(spark, kplan, work / "ck", NoopSink)
        after = cpu_ticks(os.getpid())
        recording.stop()
        recording.dump(jvm.java.io.File(str(jfr)).toPath())
    spark.stop()
    hz = os.sysconf("SC_CLK_TCK")
    by_role = collections.Counter()
    for pid, (role, ticks) in after.items():
        by_role[role] += ticks - before.get(pid, (role, 0))[1]
    print(
        f"surge dagger, {args.messages:,} messages: {seconds:.1f}s ({args.messages / seconds:,.0f}/s) "
        f"on {os.cpu_count()} cores ({os.cpu_count() * seconds:.1f} CPU-seconds available)"
    )
    print("CPU seconds by process:")
    for role, ticks in by_role.most_common():
        print(f"  {role:16} {ticks / hz:6.1f}")
    names = samples(jfr)
    print(f"Spark JVM, {len(names)} samples, by part:")
    for share, part in shares(names, part_of):
        print(f"  {share:5.1f}%  {part}")
    print("by innermost method:")
    for share, name in shares(names, lambda stack: stack[0])[: args.top]:
        print(f"  {share:5.1f}%  {name}")
    print(f"(flight recording: {jfr})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
