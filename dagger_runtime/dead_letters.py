"""Messages that cannot become rows, kept whole on a dead-letter topic next to their source.

Each is copied untouched (key and value, a tombstone stays a tombstone) to the job's dead-letter
topic on its stream's own Kafka cluster, with where it came from and why in headers named after
Kafka Connect's dead-letter context headers (`__connect.errors.*`):

    dagger.errors.topic, .partition, .offset, .timestamp (epoch ms), .kind, .reason, .job

Writes go through Spark's Kafka sink, in the JVM, inside the micro-batch: the batch is committed
only after its dead letters are stored. A replayed batch may store a dead letter twice; the
source coordinates in its headers identify it.
"""
from __future__ import annotations

from .errors import DaggerError
from .source import kafka_source_options

HEADER_PREFIX = "dagger.errors."
KINDS = ("tombstone", "no_event_time", "unparsable")


def kind_of(reason_col):
    """The decoder's reason (dev.daggers.runtime.ProtobufDecoder) as one of KINDS, as a Column."""
    from pyspark.sql import functions as F

    return (F.when(reason_col.startswith("empty (tombstone)"), F.lit("tombstone"))
            .when(reason_col.startswith("event time field"), F.lit("no_event_time"))
            .otherwise(F.lit("unparsable")))


def producer_options(stream) -> dict[str, str]:
    """Spark Kafka sink options for the stream's own cluster: its servers and client settings."""
    source = kafka_source_options(stream)
    return {k: v for k, v in source.items() if k.startswith("kafka.")}


def records(bad, topic: str, job_name: str):
    """Kafka records (key, value, topic, headers) for messages set aside; `bad` has the Kafka
    columns plus `reason`."""
    from pyspark.sql import functions as F

    def header(name, column):
        return F.struct(F.lit(HEADER_PREFIX + name).alias("key"), column.cast("string").cast("binary").alias("value"))

    headers = F.array(
        header("topic", F.col("topic")),
        header("partition", F.col("partition")),
        header("offset", F.col("offset")),
        header("timestamp", F.unix_millis(F.col("timestamp"))),
        header("kind", kind_of(F.col("reason"))),
        header("reason", F.col("reason")),
        header("job", F.lit(job_name)),
    )
    return bad.select("key", "value", F.lit(topic).alias("topic"), headers.alias("headers"))


def ensure_topic(spark, stream, topic: str, partitions: int = 1) -> str:
    """Make sure the dead-letter topic exists on the stream's cluster (created with the broker's
    default replication when missing). Uses Kafka's own AdminClient in the JVM, so every security
    setting of the stream applies exactly as for its consumer. Returns what was done."""
    jvm = spark._jvm
    props = jvm.java.util.Properties()
    for key, value in producer_options(stream).items():
        props.setProperty(key[len("kafka."):], value)
    props.setProperty("request.timeout.ms", "15000")
    props.setProperty("default.api.timeout.ms", "30000")
    admin = jvm.org.apache.kafka.clients.admin.Admin.create(props)
    try:
        names = set(admin.listTopics().names().get())
        if topic in names:
            return "exists"
        optional = jvm.java.util.Optional
        new = jvm.org.apache.kafka.clients.admin.NewTopic(topic, optional.of(partitions), optional.empty())
        try:
            admin.createTopics(jvm.java.util.Collections.singletonList(new)).all().get()
        except Exception as e:  # noqa: BLE001 - py4j wraps the JVM's ExecutionException
            if "TopicExistsException" in str(e):
                return "exists"
            raise DaggerError(f"the dead-letter topic {topic} does not exist on "
                              f"{stream.kafka.bootstrap_servers} and could not be created "
                              f"({_first_line(e)}); create it, or set dead_letter_topic") from None
        return "created"
    except DaggerError:
        raise
    except Exception as e:  # noqa: BLE001
        raise DaggerError(f"cannot reach Kafka at {stream.kafka.bootstrap_servers} to check the dead-letter "
                          f"topic {topic}: {_first_line(e)}") from None
    finally:
        admin.close()


def _first_line(e: Exception) -> str:
    text = str(getattr(e, "java_exception", None) or e)
    return text.strip().splitlines()[0] if text.strip() else type(e).__name__
