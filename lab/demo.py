"""`make demo`: the platform live on the lab. The lab comes up, the sample daggers are deployed to
its Spark clusters (surge pricing's demand and supply per S2 cell into InfluxDB, API health into
PostgreSQL, pings before completion to Kafka), sample protobuf traffic flows at a steady rate,
and the surge aggregates are read back from InfluxDB as they arrive. The lab stays up at the
end (`make lab-down` stops it); the daggers keep running until `dagger stop`.

    python -m lab.demo [--rate 40] [--windows 1]
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
import threading
import time
from pathlib import Path

import yaml
from rich.console import Console
from rich.live import Live
from rich.table import Table

from dagger_runtime import http_client
from loadtest import traffic

from . import access
from .cli import converge, lab_dir

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples" / "daggers"
# dagger -> (example, cluster, sink)
DAGGERS = {
    "surge-demand": ("completed_bookings_by_s2.yaml", "blue", "influx"),
    "surge-supply": ("driver_supply_by_s2.yaml", "blue", "influx"),
    "api-health": ("api_health.yaml", "green", "postgres"),
    "pings-before-completion": ("pings_before_completion.yaml", "green", "kafka"),
}
TOPICS = [
    "GO_RIDE-booking-log",
    "GO_CAR-booking-log",
    "driver-location-ping",
    "available-driver-location-ping",
    "p-logstream-all",
    "allocations-pings-before-completion",
]
DEMAND_QUERY = (
    'SELECT sum("num_of_bookings") AS demand FROM "surge_demand" WHERE time > now() - 15m '
    'GROUP BY time(1m), "tag_s2id" fill(none)'
)
SUPPLY_QUERY = (
    'SELECT sum("drivers") AS supply FROM "surge_supply" WHERE time > now() - 15m GROUP BY time(1m), "s2id" fill(none)'
)
TEAMS = ("allocations", "api-health")
# the surge daggers are team allocations': their aggregates are in its own InfluxDB database,
# read back with its own credential (its user may read and write that database only)
SURGE_TEAM = "allocations"


def ports() -> dict[str, int]:
    base = int(os.environ.get("DAGGER_LAB_PORT_BASE") or 19000)
    return {
        "kafka": base + 192,
        "influx": base + 4086,
        "postgres": base + 4432,
        "prometheus": base + 4090,
        "portal": base + 4080,
    }


def bootstrap() -> str:
    base = ports()["kafka"]
    return ",".join(f"127.0.0.1:{base + 100 * n}" for n in range(3))


def job_specs(folder: Path) -> dict[str, Path]:
    """The examples, pointed at the lab (a YAML writer; secrets as ${VAR} references). Each logs in
    to Kafka as its team's principal, which may read the team's granted topics and write only
    under the team's prefix: the sink and dead-letter topics are named so."""
    p, servers = ports(), bootstrap()
    # root's own: a deploy copies each spec into its team's spec folder, which its driver reads
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    folder.chmod(0o700)
    specs = {}
    for name, (example, _, sink) in DAGGERS.items():
        job = yaml.safe_load((EXAMPLES / example).read_text())
        job["name"], team = name, job["team"]
        job["dead_letter_topic"] = f"{team}-{name}-dlq"
        for stream in job["streams"]:
            stream["kafka"].update(
                bootstrap_servers=servers,
                auto_offset_reset="latest",
                group_id=access.consumer_group(team, name),
                client=access.team_client(team),
            )
        # each sink logs in as the team's own user to the team's own database (never the registry's)
        if sink == "influx":
            job["sink"] = {
                "type": "influx",
                "influx": access.team_influx_sink(team, f"http://127.0.0.1:{p['influx']}", name.replace("-", "_")),
            }
        elif sink == "postgres":
            job["sink"] = {
                "type": "postgres",
                "postgres": access.team_postgres_sink(team, "127.0.0.1", p["postgres"], "api_health"),
            }
        else:
            job["sink"]["kafka"].update(
                brokers=servers, topic=f"{team}-{job['sink']['kafka']['topic']}", client=access.team_client(team)
            )
        specs[name] = folder / f"{name}.yaml"
        specs[name].write_text(yaml.safe_dump(job, sort_keys=False))
    return specs


def create_topics() -> None:
    from kafka.admin import KafkaAdminClient, NewTopic
    from kafka.errors import TopicAlreadyExistsError

    admin = KafkaAdminClient(bootstrap_servers=bootstrap(), client_id="lab-demo", **access.kafka_python())
    try:
        existing = set(admin.list_topics())
        new = [NewTopic(t, num_partitions=2, replication_factor=3) for t in TOPICS if t not in existing]
        if new:
            try:
                admin.create_topics(new)
            except TopicAlreadyExistsError:
                pass
    finally:
        admin.close()


class Traffic(threading.Thread):
    """Bookings, driver pings and API logs at a steady rate, event time now, until stopped."""

    def __init__(self, rate: int):
        super().__init__(daemon=True, name="demo-traffic")
        self.rate, self.sent, self.stopping = rate, 0, threading.Event()

    def run(self) -> None:
        from kafka import KafkaProducer

        from protos import registry

        dset = registry.load()
        kinds = [
            (traffic.bookings, traffic.BOOKING, ["GO_RIDE-booking-log", "GO_CAR-booking-log"], "order_number"),
            (
                traffic.driver_pings,
                "gojek.esb.driverlocation.DriverLocationLogMessage",
                ["driver-location-ping", "available-driver-location-ping"],
                "driver_id",
            ),
            (traffic.api_logs, "gojek.esb.apilog.ApiLogMessage", ["p-logstream-all"], "request_id"),
        ]
        pools = [
            (make(600, minutes=1, seed=40 + i), dset.message_class(message), topics, key)
            for i, (make, message, topics, key) in enumerate(kinds)
        ]
        producer = KafkaProducer(bootstrap_servers=bootstrap(), acks="all", linger_ms=20, **access.kafka_python())
        tick = 0
        while not self.stopping.is_set():
            started = time.monotonic()
            now = dt.datetime.now(dt.timezone.utc)
            for events, message, topics, key in pools:
                chunk = [
                    dict(e, event_timestamp=now)
                    for e in (events[(tick * self.rate + j) % len(events)] for j in range(self.rate))
                ]
                for i, value in enumerate(traffic.encode(chunk, message)):
                    producer.send(topics[i % len(topics)], key=str(chunk[i].get(key, i)).encode(), value=value)
                self.sent += len(chunk)
            producer.flush()
            tick += 1
            self.stopping.wait(max(0.0, 1.0 - (time.monotonic() - started)))
        producer.close()


def influxql(query: str) -> list[dict]:
    user = access.sink_user(SURGE_TEAM)
    data = http_client.post(  # basic auth, not InfluxDB's u/p parameters: the password stays out of the URL
        f"http://127.0.0.1:{ports()['influx']}/query",
        data={"db": access.sink_database(SURGE_TEAM), "q": query},
        auth=(user, access.influx_password(user)),
        timeout=10,
    ).json()
    rows = []
    for series in data["results"][0].get("series", []):
        for values in series["values"]:
            rows.append({**series.get("tags", {}), **dict(zip(series["columns"], values))})
    return rows


def surge_table() -> tuple[Table, int]:
    """Demand and supply per S2 cell and minute, read back from InfluxDB; and how many minutes
    have both."""
    cells: dict[tuple[str, str], dict] = {}
    for row in influxql(DEMAND_QUERY):
        cells.setdefault((row["time"], row["tag_s2id"]), {})["demand"] = row["demand"]
    for row in influxql(SUPPLY_QUERY):
        cells.setdefault((row["time"], row["s2id"]), {})["supply"] = row["supply"]
    table = Table(title="surge per S2 cell (level 13) and minute, from InfluxDB", title_justify="left")
    for column in ("minute (UTC)", "S2 cell", "demand", "supply", "demand / supply"):
        table.add_column(column, justify="right" if column != "S2 cell" else "left")
    both = {m for (m, _), v in cells.items() if "demand" in v and "supply" in v}
    latest = max(both) if both else None
    busiest = sorted(
        ((k, v) for k, v in cells.items() if k[0] == latest), key=lambda kv: kv[1].get("demand", 0), reverse=True
    )[:15]
    for (minute, cell), v in busiest:
        demand, supply = v.get("demand", 0), v.get("supply", 0)
        table.add_row(minute[11:16], cell, str(demand), str(supply), f"{demand / supply:.2f}" if supply else "-")
    return table, len(both)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lab.demo",
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--rate", type=int, default=40, help="messages a second of each kind (default 40)")
    parser.add_argument(
        "--windows",
        type=int,
        default=1,
        help="end once demand and supply of this many minutes are in InfluxDB (default 1)",
    )
    parser.add_argument("--timeout", type=float, default=480, help="give up waiting for results after SECONDS")
    args = parser.parse_args(argv)
    console = Console(highlight=False, width=None if sys.stdout.isatty() else 120)
    began = time.monotonic()

    console.rule("1. the lab (playbooks/site.yml through ansible-runner)")
    result = converge("site.yml")
    if not result.ok:
        for failure in result.failures:
            console.print(f"[red]lab up failed:[/red] {failure}", markup=True)
        return 1
    console.print("lab up: already up, nothing changed" if result.changed == 0 else f"lab up: {result.changed} changes")

    console.rule("2. topics and traffic")
    create_topics()
    console.print(f"topics on primary ({bootstrap()}): {', '.join(TOPICS)}")
    registry_url = (lab_dir() / "secrets" / "registry.url").read_text().strip()
    for team in TEAMS:  # each team's Kafka and sink passwords; a deploy hands a driver its team's only
        os.environ.update(access.team_env(team))
        os.environ.update(access.team_sink_env(team))
    flow = Traffic(args.rate)
    flow.start()
    console.print(
        f"sample traffic: {args.rate} bookings, {args.rate} driver pings and {args.rate} API logs a second, "
        "event time now"
    )

    console.rule("3. the sample daggers (dagger deploy)")
    from dagger_runtime.lifecycle.operations import deploy, status
    from dagger_runtime.lifecycle.registry import Registry

    registry = Registry(registry_url)
    status(registry, None, actor="demo")  # the registry learns of daggers a lab restart ended
    specs = job_specs(lab_dir() / "demo")
    for name, path in specs.items():
        cluster = DAGGERS[name][1]
        current = registry.get(name)
        if current and current.running:
            console.print(f"{name}: already running on {current.cluster} (version {current.version})")
            continue
        with console.status(f"deploying {name} to {cluster} ..."):
            outcome = deploy(registry, str(path), cluster, actor="demo")
        for line in outcome.lines:
            console.print(line, markup=False)

    console.rule("4. the aggregates, read back from InfluxDB")
    console.print(
        f"InfluxQL (database {access.sink_database(SURGE_TEAM)}, as {access.sink_user(SURGE_TEAM)}):", markup=False
    )
    console.print(f"  {DEMAND_QUERY}\n  {SUPPLY_QUERY}", markup=False)
    deadline = time.monotonic() + args.timeout
    minutes = 0
    try:
        with Live(console=console, refresh_per_second=1) as live:
            while time.monotonic() < deadline:
                try:
                    table, minutes = surge_table()
                    table.caption = (
                        f"{flow.sent:,} messages sent; the busiest cells of the latest minute; a "
                        "minute's window closes a minute after it ends (the watermark delay)"
                    )
                    live.update(table)
                except OSError:
                    pass
                if minutes >= args.windows:
                    break
                time.sleep(3)
    finally:
        flow.stopping.set()
        flow.join(timeout=10)
    registry.close()
    console.print()

    console.rule("5. where to look next")
    p = ports()
    console.print(
        f"the portal                            http://127.0.0.1:{ports()['portal']}/ (sign in as "
        f"{access.analyst(SURGE_TEAM)}, password in "
        f"{lab_dir() / 'secrets' / 'keycloak' / 'users' / (access.analyst(SURGE_TEAM) + '.password')})"
    )
    console.print(f"dagger status / list / logs NAME      --registry @{lab_dir() / 'secrets' / 'registry.url'}")
    console.print(
        f"Prometheus                            http://127.0.0.1:{p['prometheus']}/alerts "
        "(the daggers' targets and alert rules)"
    )
    console.print(
        f"  its login (the platform's only)     user {access.METRICS_USER}, password in "
        f"{lab_dir() / 'secrets' / 'prometheus' / (access.METRICS_USER + '.password')}"
    )
    console.print("Grafana dashboards (JSON)             python -m monitoring.dashboards --out DIR")
    console.print("lab status / make lab-down            the lab stays up; the daggers keep running")
    took = time.monotonic() - began
    if minutes < args.windows:
        console.print(
            f"[red]no surge aggregates in InfluxDB after {took:.0f} s[/red]: see `dagger status` "
            "and `dagger logs surge-demand`"
        )
        return 1
    console.print(f"demo done in {took:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
