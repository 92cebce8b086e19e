"""`python -m bench.scaling`: the surge dagger on the lab's standalone Spark cluster with one
executor of one core, then two: the rate per executor core, how it grows from one executor to
two, and from that the sizing table infra/ sizes a team's Spark workers with
(infra/throughput.json).

Run after `python -m bench`, on the lab (`python -m lab up`): the figures go into the JSON line
of bench/results/latest.json (`scaling`), which is then appended with the commit to the results
history.

Each count of executors gets a driver of its own, in client mode, run as the owner of the team's
checkpoint folder: the user a deployed dagger's driver runs as on the cluster. It logs in to the
cluster with the cluster's Spark secret and to Kafka as the team, and reads the same pre-loaded
topic from its first offset to its end (Trigger.AvailableNow) into a no-op sink: a warm-up run
per executor, then the best of --repeat. The rows of every run are compared: the same windows whatever the
executors.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.errors import UnknownTopicOrPartitionError

from bench import history
from bench.commands import commit
from bench.kafka import NoopSink, dagger_once
from dagger_runtime.config import load_job
from dagger_runtime.lifecycle.clusters import get_cluster
from dagger_runtime.lifecycle.spark import AUTH_SECRET_ENV, EXECUTOR_MEMORY_MB, auth_conf, client_env
from dagger_runtime.plan import plan_job
from dagger_runtime.session import build_session
from infra import sizing_reference
from infra.sizing import Throughput
from lab import access
from lab.demo import bootstrap
from loadtest.feeder import feed, lab_client
from protos import registry

REPO = Path(__file__).resolve().parent.parent
TEAM, CLUSTER = "allocations", "blue"
TOPIC = "booking-events-bench-scaling"  # under the team's read grant (booking-events-*)
DAGGER = "bench-scaling"
DEAD_LETTERS = f"{TEAM}-{DAGGER}-dlq"  # under the team's write prefix
EXAMPLE = REPO / "examples" / "daggers" / "completed_bookings_by_s2.yaml"
THROUGHPUT = REPO / "infra" / "throughput.json"
EXECUTORS = (1, 2)
# batches of this many messages, as a dagger catching up a backlog reads them: the rate over the
# batches is what a live dagger sustains, without the query's start and end, which it pays once
MESSAGES_PER_BATCH = 100_000
# the share of its cores a team's cluster is planned to use at its peak: the rest is how fast it
# catches up a backlog (after a failover or a sink outage), here at least as fast again as the peak
UTILISATION = 0.5
TABLE_RATES = (10_000, 50_000, 100_000, 250_000, 500_000, 1_000_000, 2_000_000)


def log(text: str) -> None:
    print(f"[scaling] {text}", file=sys.stderr, flush=True)


# -- the driver: one count of executors (runs as the team's user) ---------------------------------


def _spec(folder: Path, servers: str) -> Path:
    """The seeds' surge dagger reading the bench topic as the team (a YAML writer; the password a
    ${VAR} reference, as `dagger deploy` hands it)."""
    job = yaml.safe_load(EXAMPLE.read_text())
    job["name"] = DAGGER
    job["dead_letter_topic"] = DEAD_LETTERS
    for stream in job["streams"]:
        stream["topics"] = [TOPIC]
        stream.pop("topic_pattern", None)
        stream["kafka"].update(
            bootstrap_servers=servers,
            auto_offset_reset="earliest",
            group_id=access.consumer_group(TEAM, DAGGER),
            max_messages_per_batch=MESSAGES_PER_BATCH,
            client=access.team_client(TEAM),
        )
    path = folder / f"{DAGGER}.yaml"
    path.write_text(yaml.safe_dump(job, sort_keys=False))
    return path


def drive(executors: int, servers: str, messages: int, repeat: int) -> dict:
    """Runs of the dagger with `executors` executors of one core each; what they measured."""
    cluster = get_cluster(CLUSTER, team=TEAM)
    work = Path(tempfile.mkdtemp(prefix="dagger-scaling-"))
    plan = plan_job(load_job(_spec(work, servers)), registry.load())
    conf = {
        **auth_conf(cluster),
        "spark.executor.cores": "1",
        "spark.cores.max": str(executors),
        "spark.executor.memory": f"{EXECUTOR_MEMORY_MB}m",
        "spark.pyspark.python": cluster.python,
        "spark.driver.host": "127.0.0.1",
    }
    # a client-mode driver on a standalone cluster takes the secret from its conf only (Spark's
    # SecurityManager); the environment's copy (_SPARK_AUTH_SECRET) is moved there, off any command line
    secret = {"spark.authenticate.secret": os.environ.pop(AUTH_SECRET_ENV)} if cluster.auth_secret_file else {}
    spark = build_session(
        f"dagger-{DAGGER}-{executors}",
        master=cluster.master,
        parallelism=executors,
        extra_conf=conf,
        secret_conf=secret,
    )
    sc = spark.sparkContext
    deadline = time.monotonic() + 120
    while sc._jsc.sc().getExecutorMemoryStatus().size() - 1 < executors:  # the driver's is one of them
        if time.monotonic() > deadline:
            raise RuntimeError(f"the cluster gave {sc._jsc.sc().getExecutorMemoryStatus().size() - 1} executors")
        time.sleep(0.5)
    checkpoint = Path(cluster.checkpoint_root) / f"{DAGGER}-{executors}"
    runs, sustained, per_cpu, digests = [], [], [], set()
    # each executor's JVM warms its JIT on its share of the messages: as many warm-up runs as
    # executors, so each has seen the topic once before the runs that count
    warm_ups = executors
    for i in range(warm_ups + repeat):
        batches = work / f"batches-{i}.jsonl"
        cpu_before = executors_cpu_seconds(sc.applicationId)
        seconds = dagger_once(spark, plan, checkpoint, NoopSink, log_path=str(batches))
        cpu = executors_cpu_seconds(sc.applicationId) - cpu_before
        rate = sustained_rate([json.loads(line) for line in batches.read_text().splitlines()])
        rows = sorted(json.dumps(r, sort_keys=True, default=str) for r in NoopSink.kept())
        digests.add(hashlib.sha256("\n".join(rows).encode()).hexdigest())
        label = f"warm-up {i + 1}/{warm_ups}" if i < warm_ups else f"run {i - warm_ups + 1}/{repeat}"
        log(
            f"{executors} executor(s): {label} {seconds:.1f}s ({messages / seconds:,.0f}/s; {rate:,.0f}/s over "
            f"its batches; the executors' CPU {cpu:.1f}s, {messages / cpu:,.0f} msg a CPU-second)"
        )
        if i >= warm_ups:
            runs.append(seconds)
            sustained.append(rate)
            per_cpu.append(messages / cpu)
    if len(digests) != 1:
        raise RuntimeError(f"{executors} executor(s): the runs wrote different rows")
    used = sc._jsc.sc().getExecutorMemoryStatus().size() - 1
    spark.stop()
    shutil.rmtree(checkpoint, ignore_errors=True)
    shutil.rmtree(work, ignore_errors=True)
    best = min(runs)
    return {
        "executors": used,
        "cores": used,
        "runs_seconds": [round(s, 3) for s in runs],
        "best_seconds": round(best, 3),
        "wall_msgs_per_s": round(messages / best),
        "msgs_per_s": round(max(sustained)),
        "msgs_per_cpu_s": round(max(per_cpu)),
        "rows": len(rows),
        "rows_sha256": digests.pop(),
    }


# -- the bench: topic, feed, a driver per count, the table ----------------------------------------


def sizing_table(measured) -> list[dict]:
    """Executor cores a team needs for each peak rate (infra/sizing.py's rule), and what they carry."""
    return [
        {
            "peak_msgs_per_s": rate,
            "executor_cores": measured.executor_cores(rate),
            "planned_for_msgs_per_s": measured.capacity(measured.executor_cores(rate)),
        }
        for rate in TABLE_RATES
    ]


def executors_cpu_seconds(app_id: str) -> float:
    """CPU seconds the application's executors have used: their JVMs and the Python workers they
    started (Linux /proc; the executors run as the driver's user, so it may read them)."""
    tick = os.sysconf("SC_CLK_TCK")
    procs = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry.name}/stat").read_text()
            cmdline = Path(f"/proc/{entry.name}/cmdline").read_bytes()
        except OSError:  # gone, or not ours to read
            continue
        fields = stat[stat.rindex(")") + 2 :].split()  # after the command's name, which may hold blanks
        # ppid; utime, stime, and the same of waited-for children
        procs[int(entry.name)] = (int(fields[1]), cmdline, sum(int(f) for f in fields[11:15]))
    wanted = {
        pid
        for pid, (_, cmdline, _) in procs.items()
        if b"CoarseGrainedExecutorBackend" in cmdline and app_id.encode() in cmdline.split(b"\0")
    }
    grew = True
    while grew:
        more = {pid for pid, (ppid, _, _) in procs.items() if ppid in wanted} - wanted
        wanted |= more
        grew = bool(more)
    return sum(procs[pid][2] for pid in wanted) / tick


def sustained_rate(batches: list[dict]) -> float:
    """Messages a second over the batches that read any (pure): their messages over their time."""
    read = [b for b in batches if b.get("input_rows")]
    seconds = sum(b["batch_duration_ms"] for b in read) / 1000
    return sum(b["input_rows"] for b in read) / seconds if seconds else 0.0


def _owner(path: str) -> str:
    return pwd.getpwuid(os.stat(path).st_uid).pw_name


def _driver_env(cluster, secret_env: dict[str, str]) -> dict[str, str]:
    keep = (
        "PYTHONPATH",
        "PATH",
        "LANG",
        "LC_ALL",
        "JAVA_HOME",
        "DAGGER_LAB_DIR",
        "DAGGER_LAB_PORT_BASE",
        "DAGGER_CLUSTERS",
    )
    env = {k: v for k, v in os.environ.items() if k in keep}
    env.update(client_env(cluster))
    env.update(secret_env)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return env


def _delete_topic(admin) -> None:
    try:
        admin.delete_topics([TOPIC])
        time.sleep(3)  # deletion is asynchronous on the brokers
    except UnknownTopicOrPartitionError:
        pass


def _reset_topic(servers: str) -> None:
    admin = KafkaAdminClient(bootstrap_servers=servers, client_id="bench-scaling", **access.kafka_python())
    try:
        _delete_topic(admin)
        for _ in range(20):
            try:
                admin.create_topics([NewTopic(TOPIC, num_partitions=max(EXECUTORS), replication_factor=3)])
                break
            except Exception as e:  # noqa: BLE001 (still being deleted)
                if "exists" not in type(e).__name__.lower() and "marked for deletion" not in str(e):
                    raise
                time.sleep(1)
        else:
            raise RuntimeError(f"could not recreate {TOPIC}")
        if DEAD_LETTERS not in admin.list_topics():
            admin.create_topics([NewTopic(DEAD_LETTERS, num_partitions=1, replication_factor=3)])
    finally:
        admin.close()


def _feed(servers: str, messages: int) -> float:
    spark = build_session("dagger-bench-scaling-feeder", parallelism=2)
    fed = feed(spark, servers, TOPIC, messages, client=lab_client(access.client_properties(access.ADMIN)))
    spark.stop()
    return fed.per_second


def _drive_as(user: str, cluster, env: dict, executors: int, servers: str, messages: int, repeat: int) -> dict:
    """One driver (`drive`), as `user`, in a folder of its own (Spark keeps its session artifacts there)."""
    argv = ["runuser", "-u", user, "--", cluster.python, "-m", "bench.scaling", "--drive", str(executors)]
    argv += ["--messages", str(messages), "--repeat", str(repeat), "--bootstrap-servers", servers]
    log(f"{executors} executor(s) of one core on {cluster.name} ({cluster.master}), the driver as {user}")
    folder = tempfile.mkdtemp(prefix="dagger-scaling-driver-")
    shutil.chown(folder, user)
    done = subprocess.run(argv, cwd=folder, env=env, stdout=subprocess.PIPE, text=True, check=False)
    shutil.rmtree(folder, ignore_errors=True)
    if done.returncode != 0:
        raise RuntimeError(f"the driver with {executors} executor(s) exited {done.returncode}")
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    if figures["executors"] != executors:
        raise RuntimeError(f"asked {executors} executor(s), the cluster gave {figures['executors']}")
    return figures


def measure(messages: int, repeat: int) -> dict:
    cluster = get_cluster(CLUSTER, team=TEAM)
    servers = bootstrap()
    user = _owner(cluster.checkpoint_root)
    _reset_topic(servers)
    log(f"feeding {messages:,} bookings into {TOPIC}")
    fed = _feed(servers, messages)
    env = _driver_env(cluster, access.team_env(TEAM))
    by = {}
    try:
        for executors in EXECUTORS:
            by[executors] = _drive_as(user, cluster, env, executors, servers, messages, repeat)
    finally:  # the lab's disks (and its mirror's) keep what the drills write, not the bench's million
        admin = KafkaAdminClient(bootstrap_servers=servers, client_id="bench-scaling", **access.kafka_python())
        _delete_topic(admin)
        admin.close()
    one, two = by[1], by[2]
    if one["rows_sha256"] != two["rows_sha256"]:
        raise RuntimeError("one executor and two wrote different rows")
    # The lab's cores are shared with the driver, the brokers and MirrorMaker: a second executor
    # gets no core of its own, so the wall-clock speed-up says little of Spark. The rate per core is
    # what one executor did with each CPU-second it used; the efficiency, how much of that a second
    # executor keeps (the work a message costs when two share a query), at most 1.
    per_core = one["msgs_per_cpu_s"]
    efficiency = min(1.0, two["msgs_per_cpu_s"] / per_core)
    return {
        "cluster": f"{cluster.name} ({TEAM}): a lab standalone cluster on {os.cpu_count()} shared cores",
        "messages": messages,
        "fed_msgs_per_s": round(fed),
        "runs": [one, two],
        "per_core_msgs_per_s": per_core,
        "one_executor_msgs_per_s": one["msgs_per_s"],
        "two_executors_msgs_per_s": two["msgs_per_s"],
        "speedup_1_to_2": round(two["msgs_per_s"] / one["msgs_per_s"], 3),
        "efficiency": round(efficiency, 3),
        "utilisation": UTILISATION,
        "rows": one["rows"],
    }


def write_throughput(scaling: dict, commit: str, path: Path = THROUGHPUT) -> dict:
    """infra/throughput.json: what infra/ sizes Spark workers from, with where it came from."""
    measured = Throughput(scaling["per_core_msgs_per_s"], scaling["efficiency"], scaling["utilisation"])
    doc = {
        "measured": {
            "commit": commit,
            "at": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "by": "make bench (bench/scaling.py)",
            "on": scaling["cluster"],
            "dagger": "the seeds' surge query (decode, S2Id, one-minute tumbling window), no-op sink",
            # the wall-clock rates on the lab, whose cores the executors share (see measure())
            "lab_cores": os.cpu_count(),
            "one_executor_msgs_per_s": scaling.get("one_executor_msgs_per_s"),
            "two_executors_msgs_per_s": scaling.get("two_executors_msgs_per_s"),
        },
        "per_core_msgs_per_s": scaling["per_core_msgs_per_s"],
        "efficiency": scaling["efficiency"],
        "utilisation": scaling["utilisation"],
        "table": sizing_table(measured),
    }
    path.write_text(json.dumps(doc, indent=2) + "\n")
    return doc


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.scaling", description=__doc__.split("\n\n")[0])
    p.add_argument("-n", "--messages", type=int, default=1_000_000, help="messages in the topic (default 1000000)")
    p.add_argument(
        "--repeat", type=int, default=3, help="runs per count of executors, after one warm-up per executor (default 3)"
    )
    p.add_argument(
        "--results",
        default=str(history.LATEST),
        metavar="PATH",
        help="the bench's JSON results, which get the figures (default: bench/results/latest.json)",
    )
    history.add_history_argument(p)
    p.add_argument(
        "--throughput",
        default=str(THROUGHPUT),
        metavar="PATH",
        help="where the sizing table goes (default: infra/throughput.json; '' for nowhere)",
    )
    p.add_argument("--drive", type=int, metavar="EXECUTORS", help=argparse.SUPPRESS)  # one driver (internal)
    p.add_argument("--bootstrap-servers", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.drive:
        print(json.dumps(drive(args.drive, args.bootstrap_servers, args.messages, args.repeat)))
        return 0

    scaling = measure(args.messages, args.repeat)
    log(
        f"per executor core {scaling['per_core_msgs_per_s']:,} msg a CPU-second, efficiency of two "
        f"{scaling['efficiency']}; sustained: one executor {scaling['one_executor_msgs_per_s']:,}/s, two "
        f"{scaling['two_executors_msgs_per_s']:,}/s ({scaling['speedup_1_to_2']}x on {os.cpu_count()} shared cores)"
    )
    if args.throughput:
        table = write_throughput(scaling, commit(), Path(args.throughput))["table"]
        if Path(args.throughput).resolve() == THROUGHPUT:
            sizing_reference.main([])  # docs/reference/sizing.md, from what infra/ now reads
        for row in table:
            log(f"  peak {row['peak_msgs_per_s']:>9,} msg/s -> {row['executor_cores']} executor cores")
    results = Path(args.results)
    doc = json.loads(results.read_text()) if results.exists() else {"results": [], "summary": {}}
    doc["summary"]["scaling"] = scaling
    results.write_text(json.dumps(doc, indent=2) + "\n")
    if args.history:
        history.append(args.history, doc["summary"])
    print(json.dumps(doc["summary"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
