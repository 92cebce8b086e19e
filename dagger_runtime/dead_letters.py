"""Messages that cannot become rows, kept whole on a dead-letter topic next to their source.

Each is copied untouched (key and value, a tombstone stays a tombstone) to the job's dead-letter
topic on its stream's own Kafka cluster, with where it came from and why in headers named after
Kafka Connect's dead-letter context headers (`__connect.errors.*`):

    dagger.errors.topic, .partition, .offset, .timestamp (epoch ms), .kind, .reason, .job

They are sent from the task that decoded them (dev.daggers.runtime.DeadLetters, in the JVM), so
each topic is read once per batch; the task flushes them before it completes, so a batch is
committed only after its dead letters are stored. A retried task or a replayed batch may store
a dead letter twice; the source coordinates in its headers identify it.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import DaggerError
from .source import CONSUMER_DEFAULTS, kafka_source_options


def producer_options(stream) -> dict[str, str]:
    """Kafka client settings for the stream's own cluster: its servers and client settings (the
    reader's consumer defaults left out)."""
    source = kafka_source_options(stream)
    return {
        k[len("kafka.") :]: v
        for k, v in source.items()
        if k.startswith("kafka.")
        and (k[len("kafka.") :] not in CONSUMER_DEFAULTS or k[len("kafka.") :] in stream.kafka.client)
    }


@dataclass(frozen=True)
class Writer:
    """A stream's dead-letter function, registered in the session: `sql_name(reason, key, value,
    topic, partition, offset, timestamp_ms)` sends one message aside and returns false."""

    table: str
    sql_name: str
    jvm: object

    def counts(self) -> dict[tuple[str, str], int]:
        """Dead letters so far per (table, kind), from the tasks that finished."""
        pairs = (each.split("=") for each in self.jvm.countsLine().split())
        return {(self.table, kind): int(n) for kind, n in pairs if n != "0"}

    def close(self) -> None:
        self.jvm.close()


def register(spark, table: str, stream, topic: str, job_name: str, *, dry: bool = False) -> Writer:
    """Register the dead-letter function of one stream (a dry one counts and sends nothing: a
    standby's rehearsal reads records the job has already read)."""
    jvm = spark._jvm
    config = jvm.java.util.HashMap()
    for key, value in producer_options(stream).items():
        config.put(key, value)
    name = f"__dagger_dead_letter_{table}"
    writer = jvm.dev.daggers.runtime.Functions.registerDeadLetters(
        spark._jsparkSession, name, config, topic, job_name, dry
    )
    return Writer(table, name, writer)


def ensure_topic(spark, stream, topic: str, partitions: int = 1) -> str:
    """Make sure the dead-letter topic exists on the stream's cluster (see `ensure_kafka_topic`)."""
    return ensure_kafka_topic(
        spark,
        producer_options(stream),
        topic,
        what="the dead-letter topic",
        fix="create it, or set dead_letter_topic",
        partitions=partitions,
    )


def ensure_kafka_topic(spark, options: dict[str, str], topic: str, *, what: str, fix: str, partitions: int = 1) -> str:
    """Make sure `topic` exists on the cluster the client `options` reach (created with the
    broker's default replication when missing). Uses Kafka's own AdminClient in the JVM, so every
    security setting applies exactly as for the job's own clients. Returns what was done."""
    jvm = spark._jvm
    servers = options.get("bootstrap.servers", "?")
    props = jvm.java.util.Properties()
    for key, value in options.items():
        props.setProperty(key, value)
    props.setProperty("request.timeout.ms", "15000")
    props.setProperty("default.api.timeout.ms", "30000")
    admin = jvm.org.apache.kafka.clients.admin.Admin.create(props)
    try:
        # one call (iterating a Java set from Python costs a converted exception at its end)
        if admin.listTopics().names().get().contains(topic):
            return "exists"
        optional = jvm.java.util.Optional
        new = jvm.org.apache.kafka.clients.admin.NewTopic(topic, optional.of(partitions), optional.empty())
        try:
            admin.createTopics(jvm.java.util.Collections.singletonList(new)).all().get()
        except Exception as e:  # noqa: BLE001 - py4j wraps the JVM's ExecutionException
            if "TopicExistsException" in str(e):
                return "exists"
            raise DaggerError(
                f"{what} {topic} is not on {servers} (or not visible to the job's Kafka login) and "
                f"could not be created ({_first_line(e)}); {fix}"
            ) from None
        return "created"
    except DaggerError:
        raise
    except Exception as e:  # noqa: BLE001
        raise DaggerError(f"cannot reach Kafka at {servers} to check {what} {topic}: {_first_line(e)}") from None
    finally:
        admin.close()


def _first_line(e: Exception) -> str:
    text = str(getattr(e, "java_exception", None) or e)
    return text.strip().splitlines()[0] if text.strip() else type(e).__name__
