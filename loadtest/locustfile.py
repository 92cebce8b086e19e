"""Kafka load from locust: generated protobuf messages under a load shape, every delivery in a ledger.

    .venv/bin/locust -f loadtest/locustfile.py --headless --host 127.0.0.1:9092 \\
        --kafka-topic drill-bookings --kafka-message BookingLogMessage \\
        --kafka-hints '{"status": {"enum": {"COMPLETED": 3, "CREATED": 1}}}' --kafka-key driver_id \\
        --shape-config '{"shape": "steps", "per_user_rate": 20,
                         "steps": [{"rate": 100, "duration_s": 30}, {"rate": 300, "duration_s": 30}]}' \\
        --kafka-ledger run.parquet --csv run

Run it from the repository root. Every --kafka-* and --shape-config option can also come from
the environment (LOCUST_KAFKA_TOPIC, LOCUST_SHAPE_CONFIG, ...) or a locust.conf; the shape is
inline JSON or a .json/.yaml file (see loadtest/shapes.py; `python -m loadtest shapes FILE`
prints its plan). Without --shape-config, -u/--users, -r/--spawn-rate and -t/--run-time apply.

Each user sends one message per task, paced by constant_throughput(per_user_rate), so the rate
is users x per_user_rate. All users of a process share one KafkaProducer (acks=all, idempotent)
and one Ledger, written when the test stops. Each acknowledgement (or failure) is a locust
request event: request_type "kafka", name the topic, response_time the milliseconds from send()
to Kafka's acknowledgement, response_length the value's bytes; so locust's statistics, --csv
and --html work as for HTTP. kafka-python runs under locust's gevent monkey-patching: its IO
thread becomes a greenlet. In distributed mode each worker has its own producer and ledger
(<ledger>.worker<N>) and its own index range.
"""

from __future__ import annotations

import itertools
import logging
import os
import time

import gevent
from locust import LoadTestShape, User, constant_throughput, events, task
from locust.runners import MasterRunner, WorkerRunner

from loadtest import shapes
from loadtest.generator import HintError, MessageGenerator, fact
from loadtest.ledger import Ledger
from loadtest.producer import DeliveryTracker, close_quietly, default_fields, key_bytes, make_producer
from loadtest.settings import SettingsError, load_json_or_file
from protos import registry
from protos.errors import SchemaError

log = logging.getLogger("loadtest")
logging.getLogger("kafka").setLevel(logging.WARNING)  # kafka-python's INFO lines would drown locust's own
WORKER_INDEX_SPAN = 10**12  # message indices of worker N start at N x this: no two workers repeat one


class _Drill:
    """What the users of this process share."""

    def __init__(self):
        self.plan: shapes.Plan | None = None
        self.generator: MessageGenerator | None = None
        self.topic = ""
        self.key_field: str | None = None
        self.fields: list[str] = []
        self.ledger_path = ""
        self.bootstrap = ""
        self.client: dict = {}
        self.producer = None
        self.ledger: Ledger | None = None
        self.tracker: DeliveryTracker | None = None
        self.indices = itertools.count()
        self.event_field: str | None = None

    def send(self) -> None:
        index = next(self.indices)
        value, facts = self.generator.make(index, time.time_ns() // 1_000_000)
        key = key_bytes(fact(facts, self.key_field)) if self.key_field else None
        self.tracker.send(
            self.producer,
            self.topic,
            value,
            key=key,
            index=index,
            facts=facts,
            event_time_ms=facts.get(self.event_field) if self.event_field else None,
        )


drill = _Drill()


@events.init_command_line_parser.add_listener
def _arguments(parser) -> None:
    g = parser  # not an argument group: only the parser itself takes locust's is_secret
    g.add_argument(
        "--shape-config",
        env_var="LOCUST_SHAPE_CONFIG",
        default="",
        help="load shape: inline JSON or a .json/.yaml file (loadtest/shapes.py)",
    )
    g.add_argument("--kafka-topic", env_var="LOCUST_KAFKA_TOPIC", default="loadtest", help="topic to produce to")
    g.add_argument(
        "--kafka-message",
        env_var="LOCUST_KAFKA_MESSAGE",
        default="gojek.esb.booking.BookingLogMessage",
        help="protobuf message, full or simple name",
    )
    g.add_argument(
        "--kafka-hints",
        env_var="LOCUST_KAFKA_HINTS",
        default="",
        help="per-field hints: inline JSON or a .json/.yaml file (loadtest/generator.py)",
    )
    g.add_argument("--kafka-seed", env_var="LOCUST_KAFKA_SEED", type=int, default=0, help="generator seed")
    g.add_argument("--kafka-key", env_var="LOCUST_KAFKA_KEY", default="", help="fact path of the message key")
    g.add_argument(
        "--kafka-facts",
        env_var="LOCUST_KAFKA_FACTS",
        default="",
        help="comma-separated fact paths the ledger keeps (besides the hinted ones and the key)",
    )
    g.add_argument(
        "--kafka-ledger",
        env_var="LOCUST_KAFKA_LEDGER",
        default="loadtest-ledger.parquet",
        help="where to write the ledger when the test stops (Parquet)",
    )
    g.add_argument(
        "--kafka-client",
        env_var="LOCUST_KAFKA_CLIENT",
        default="",
        is_secret=True,
        help="extra kafka-python producer settings as a JSON object (SASL etc.)",
    )
    g.add_argument(
        "--kafka-lab-user",
        env_var="LOCUST_KAFKA_LAB_USER",
        default="",
        help="log in to the lab's Kafka as this principal",
    )
    g.add_argument(
        "--schema-urls",
        env_var="LOCUST_SCHEMA_URLS",
        default="",
        help="descriptor set URLs (default: protos/descriptors)",
    )


def _fail(message: str):
    raise SystemExit(f"loadtest: {message}")


@events.init.add_listener
def _init(environment, **_kwargs) -> None:
    opts = environment.parsed_options
    if opts is None or isinstance(environment.runner, MasterRunner):
        return  # the master only shapes the load; workers produce

    try:
        config = load_json_or_file(opts.shape_config, "--shape-config")
        drill.plan = shapes.plan_from_config(config) if config is not None else None
        dset = registry.load(opts.schema_urls or None)
        message = dset.resolve(opts.kafka_message)
        drill.generator = MessageGenerator(
            dset, message, load_json_or_file(opts.kafka_hints, "--kafka-hints"), seed=opts.kafka_seed
        )
        client = load_json_or_file(opts.kafka_client, "--kafka-client") or {}
    except (shapes.ShapeError, SettingsError, SchemaError, HintError) as e:
        _fail(str(e))
    if not isinstance(client, dict):
        _fail(f"--kafka-client must be a JSON object of kafka-python settings, not {client!r}")
    if opts.kafka_lab_user:
        from lab import access

        client = {**access.kafka_python(opts.kafka_lab_user), **client}
    drill.client = client
    drill.bootstrap = (opts.host or "").removeprefix("kafka://")
    if not drill.bootstrap:
        _fail("give the Kafka bootstrap servers as --host (host:port[,host:port])")
    drill.topic = opts.kafka_topic
    drill.key_field = opts.kafka_key or None
    extra = [f.strip() for f in opts.kafka_facts.split(",") if f.strip()]
    scalars = drill.generator.scalar_paths()
    for path in extra + ([drill.key_field] if drill.key_field else []):
        if path not in scalars:
            _fail(f"{path!r} is not a singular field of {drill.generator.message_name}")
    drill.fields = list(dict.fromkeys(default_fields(drill.generator, drill.key_field) + extra))
    drill.event_field = drill.generator.event_time_field
    drill.ledger_path = opts.kafka_ledger
    if isinstance(environment.runner, WorkerRunner):
        drill.ledger_path += f".worker{environment.runner.worker_index}"
    per_user = drill.plan.per_user_rate if drill.plan else shapes.DEFAULT_PER_USER_RATE
    KafkaUser.wait_time = constant_throughput(per_user)


@events.test_start.add_listener
def _start(environment, **_kwargs) -> None:
    if isinstance(environment.runner, MasterRunner):
        return
    fire = environment.events.request.fire

    def on_result(topic, latency_s, size, error) -> None:
        fire(
            request_type="kafka",
            name=topic,
            response_time=latency_s * 1000.0,
            response_length=size,
            exception=error,
            context={},
        )

    worker = environment.runner.worker_index if isinstance(environment.runner, WorkerRunner) else 0
    drill.indices = itertools.count(worker * WORKER_INDEX_SPAN)
    drill.ledger = Ledger(
        drill.fields,
        meta={
            "message": drill.generator.message_name,
            "seed": drill.generator.seed,
            "hints": drill.generator.hints,
            "topics": [drill.topic],
            "key": drill.key_field,
            "shape": drill.plan and drill.plan.name,
        },
    )
    drill.tracker = DeliveryTracker(drill.ledger, on_result=on_result)
    drill.producer = make_producer(drill.bootstrap, **drill.client)


@events.test_stop.add_listener
def _stop(environment, **_kwargs) -> None:
    if drill.producer is None:
        return
    producer, drill.producer = drill.producer, None
    drill.tracker.drain(producer, 60.0)
    close_quietly(producer)
    drill.ledger.save(drill.ledger_path)
    log.info(
        "loadtest: sent %d, acked %d, failed %d; ledger %s",
        drill.tracker.sent,
        drill.ledger.acked,
        drill.ledger.failed,
        os.path.abspath(drill.ledger_path),
    )
    if environment.parsed_options and environment.parsed_options.csv_prefix:
        # locust's CSV writer rewrites <prefix>_stats.csv once a second and not at exit: give it
        # one more turn, so the file holds the acknowledgements the flush above just counted
        gevent.sleep(1.5)


class DrillShape(LoadTestShape):
    """The --shape-config plan; without one, -u/-r (and -t) as locust would do."""

    def tick(self):
        if drill.plan is not None:
            return drill.plan.tick(self.get_run_time())
        opts = self.runner.environment.parsed_options
        return (opts.num_users or 1), (opts.spawn_rate or 1)


class KafkaUser(User):
    """Produces one generated message per task to the drill's topic."""

    wait_time = constant_throughput(shapes.DEFAULT_PER_USER_RATE)  # replaced at init from the shape

    @task
    def produce(self) -> None:
        drill.send()
