"""Team isolation on the lab's real Kafka: every client logs in (SCRAM-SHA-512), Kafka's
StandardAuthorizer allows only what the kafka role's ACLs grant (group_vars/kafka_primary.yml),
and MirrorMaker's principal may read the shared cluster but never write to it.

Refusals are checked with Kafka's own clients where kafka-python would only time out: its
consumer hides a topic it may not describe, so the refusal of a read is shown by the Java console
consumer's "not authorized" and by the describe error code (29, TOPIC_AUTHORIZATION_FAILED)."""

from __future__ import annotations

import subprocess
import time
import uuid
from pathlib import Path

import javaproperties
import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.errors import (
    ClusterAuthorizationFailedError,
    GroupAuthorizationFailedError,
    KafkaError,
    TopicAuthorizationFailedError,
)

from lab import access
from tests.labrun import PORT_BASE

pytestmark = [pytest.mark.e2e, pytest.mark.kafka]


def servers(env) -> str:
    """The lab's primary cluster on the lab's own ports (DAGGER_LAB_PORT_BASE, which a lab that is
    already up names through DAGGER_TEST_LAB_PORT_BASE)."""
    base = int(env.get("DAGGER_LAB_PORT_BASE", PORT_BASE))
    return ",".join(f"127.0.0.1:{base + 100 * n + 92}" for n in (1, 2, 3))


TOPIC_AUTHORIZATION_FAILED = 29
MESSAGES = 40


def login(env, principal: str) -> dict:
    return access.kafka_python(principal, "primary", Path(env["DAGGER_LAB_DIR"]))


def read_all(env, principal: str, topic: str, partitions: int = 2, timeout_s: float = 30) -> list[bytes]:
    consumer = KafkaConsumer(bootstrap_servers=servers(env), enable_auto_commit=False, **login(env, principal))
    try:
        consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
        consumer.seek_to_beginning()
        got, deadline = [], time.monotonic() + timeout_s
        while len(got) < MESSAGES and time.monotonic() < deadline:
            got += [r.value for records in consumer.poll(1000).values() for r in records]
        return got
    finally:
        consumer.close()


def describe_error(env, principal: str, topic: str) -> int:
    admin = KafkaAdminClient(bootstrap_servers=servers(env), **login(env, principal))
    try:
        return admin.describe_topics([topic])[0]["error_code"]
    finally:
        admin.close()


def kafka_tool(env, main: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    classpath = str(Path(__file__).resolve().parent.parent / ".jvm" / "kafka" / "*")
    return subprocess.run(
        ["java", "-Xmx128m", "-XX:TieredStopAtLevel=1", "-cp", classpath, main, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture(scope="module")
def topics(lab_env):
    """One booking topic (granted to allocations) and one API log topic (granted to api-health),
    created and filled by the administrator."""
    run = uuid.uuid4().hex[:6]
    names = {"allocations": f"bookings-iso-{run}", "api-health": f"p-logstream-iso-{run}"}
    admin = KafkaAdminClient(bootstrap_servers=servers(lab_env), **login(lab_env, "admin"))
    admin.create_topics([NewTopic(t, num_partitions=2, replication_factor=3) for t in names.values()])
    admin.close()
    producer = KafkaProducer(bootstrap_servers=servers(lab_env), acks="all", **login(lab_env, "admin"))
    for team, topic in names.items():
        for i in range(MESSAGES):
            producer.send(topic, key=f"k{i}".encode(), value=f"{team} {i}".encode())
    producer.flush(timeout=60)
    producer.close()
    return names


@pytest.mark.parametrize("team,other", [("allocations", "api-health"), ("api-health", "allocations")])
def test_a_team_reads_its_granted_topics_and_is_refused_on_the_other_teams(lab_env, topics, team, other):
    me = access.team_principal(team)
    assert sorted(read_all(lab_env, me, topics[team])) == sorted(f"{team} {i}".encode() for i in range(MESSAGES))
    assert describe_error(lab_env, me, topics[team]) == 0
    assert describe_error(lab_env, me, topics[other]) == TOPIC_AUTHORIZATION_FAILED
    # Kafka's own consumer, logged in as this team, fetching the other team's topic (by partition, as
    # Spark does: a subscription would only see no such topic)
    props = access.client_properties(me, "primary", Path(lab_env["DAGGER_LAB_DIR"]))
    refused = kafka_tool(
        lab_env,
        "org.apache.kafka.tools.consumer.ConsoleConsumer",
        "--bootstrap-server",
        servers(lab_env),
        "--topic",
        topics[other],
        "--partition",
        "0",
        "--offset",
        "earliest",
        "--max-messages",
        "1",
        "--timeout-ms",
        "20000",
        "--command-config",
        str(props),
    )
    said = refused.stdout + refused.stderr  # the tool logs to stdout and exits 0 after the error
    assert f"TopicAuthorizationException: Not authorized to access topics: [{topics[other]}]" in said, said[-2000:]
    assert "Processed a total of 0 messages" in said and f"{other} " not in said


def test_a_team_writes_only_under_its_own_prefix_and_uses_only_its_own_groups(lab_env, topics):
    me = login(lab_env, "dagger-allocations")
    producer = KafkaProducer(bootstrap_servers=servers(lab_env), acks="all", max_block_ms=10000, **me)
    try:
        with pytest.raises(TopicAuthorizationFailedError):  # granted for reading only
            producer.send(topics["allocations"], b"forged").get(timeout=20)
    finally:
        producer.close()  # a refused idempotent producer is done for: a new one below
    own = f"allocations-iso-{uuid.uuid4().hex[:6]}"
    admin = KafkaAdminClient(bootstrap_servers=servers(lab_env), **me)
    try:
        admin.create_topics([NewTopic(own, num_partitions=1, replication_factor=3)])
        with pytest.raises(TopicAuthorizationFailedError):
            admin.create_topics([NewTopic(f"api-health-iso-{uuid.uuid4().hex[:6]}", 1, 3)])
    finally:
        admin.close()
    producer = KafkaProducer(bootstrap_servers=servers(lab_env), acks="all", max_block_ms=10000, **me)
    try:
        assert producer.send(own, b"result").get(timeout=30).topic == own
    finally:
        producer.close()
    with pytest.raises(GroupAuthorizationFailedError):  # api-health's consumer groups
        consumer = KafkaConsumer(
            topics["allocations"], bootstrap_servers=servers(lab_env), group_id="dagger-api-health--x", **me
        )
        try:
            for _ in range(10):
                consumer.poll(1000)
        finally:
            consumer.close()


def test_a_client_without_a_valid_login_is_refused(lab_env, topics, tmp_path):
    bad = tmp_path / "wrong.properties"
    good_file = access.client_properties("dagger-allocations", "primary", Path(lab_env["DAGGER_LAB_DIR"]))
    good = javaproperties.loads(good_file.read_text())
    # the control: the same tool with the right login lists the team's topic
    listed = kafka_tool(
        lab_env,
        "org.apache.kafka.tools.TopicCommand",
        "--bootstrap-server",
        servers(lab_env),
        "--command-config",
        str(good_file),
        "--list",
    )
    assert listed.returncode == 0 and topics["allocations"] in listed.stdout.split(), listed.stdout[-2000:]
    password = access.password("dagger-allocations", "primary", Path(lab_env["DAGGER_LAB_DIR"]))
    bad.write_text(
        javaproperties.dumps(
            {**good, "sasl.jaas.config": good["sasl.jaas.config"].replace(password, password[::-1])}, timestamp=False
        )
    )
    wrong = kafka_tool(
        lab_env,
        "org.apache.kafka.tools.TopicCommand",
        "--bootstrap-server",
        servers(lab_env),
        "--command-config",
        str(bad),
        "--list",
    )
    said = wrong.stdout + wrong.stderr
    assert wrong.returncode != 0 and "invalid credentials with SASL mechanism SCRAM-SHA-512" in said, said[-2000:]
    assert topics["allocations"] not in said
    plain = tmp_path / "plaintext.properties"
    plain.write_text(
        javaproperties.dumps(
            {"security.protocol": "PLAINTEXT", "request.timeout.ms": "5000", "default.api.timeout.ms": "10000"},
            timestamp=False,
        )
    )
    anonymous = kafka_tool(
        lab_env,
        "org.apache.kafka.tools.TopicCommand",
        "--bootstrap-server",
        servers(lab_env),
        "--command-config",
        str(plain),
        "--list",
    )
    said = anonymous.stdout + anonymous.stderr
    # a PLAINTEXT client gets no answer from a SASL listener: the broker drops it, the tool times out
    assert anonymous.returncode != 0 and "Timed out waiting for a node assignment" in said, said[-2000:]
    assert topics["allocations"] not in said


def test_mirrormaker_reads_the_shared_cluster_but_cannot_write_or_create_there(lab_env, topics):
    mm2 = login(lab_env, "mirrormaker")
    assert sorted(read_all(lab_env, "mirrormaker", topics["allocations"])) == sorted(
        f"allocations {i}".encode() for i in range(MESSAGES)
    )
    producer = KafkaProducer(bootstrap_servers=servers(lab_env), acks="all", max_block_ms=10000, **mm2)
    try:
        with pytest.raises((TopicAuthorizationFailedError, ClusterAuthorizationFailedError, KafkaError)) as refused:
            producer.send(topics["allocations"], b"reverse flow").get(timeout=20)
        assert "Authorization" in type(refused.value).__name__ or "Authorization" in str(refused.value)
    finally:
        producer.close()
    admin = KafkaAdminClient(bootstrap_servers=servers(lab_env), **mm2)
    try:
        with pytest.raises(TopicAuthorizationFailedError):
            admin.create_topics([NewTopic("mm2-offset-syncs.mirror.internal", 1, 3)])
    finally:
        admin.close()
    # and nothing of MirrorMaker's is on the shared cluster (it has run since the lab came up)
    admin = KafkaAdminClient(bootstrap_servers=servers(lab_env), **login(lab_env, "admin"))
    try:
        on_primary = set(admin.list_topics())
    finally:
        admin.close()
    assert not {
        t
        for t in on_primary
        if t.startswith(("mm2-", "heartbeats", "mirror.")) or t.endswith(".internal") or "checkpoints" in t
    }, on_primary


def test_on_the_mirror_each_team_reads_only_the_copies_of_its_granted_topics(lab_env, topics):
    """The mirror authenticates too, with the same grants under the copies' names (primary.<topic>)."""
    mirror = f"127.0.0.1:{int(lab_env['DAGGER_LAB_PORT_BASE']) + 1000 + 100 + 92}"
    lab = Path(lab_env["DAGGER_LAB_DIR"])
    copy = f"primary.{topics['api-health']}"
    admin = KafkaAdminClient(bootstrap_servers=mirror, **access.kafka_python("admin", "mirror", lab))
    try:
        deadline = time.monotonic() + 120  # MirrorMaker looks for new topics every 10 s
        while copy not in admin.list_topics() and time.monotonic() < deadline:
            time.sleep(2)
    finally:
        admin.close()
    consumer = KafkaConsumer(
        bootstrap_servers=mirror, enable_auto_commit=False, **access.kafka_python("dagger-api-health", "mirror", lab)
    )
    try:
        consumer.assign([TopicPartition(copy, p) for p in range(2)])
        consumer.seek_to_beginning()
        got, deadline = [], time.monotonic() + 60
        while len(got) < MESSAGES and time.monotonic() < deadline:
            got += [r.value for records in consumer.poll(1000).values() for r in records]
    finally:
        consumer.close()
    assert sorted(got) == sorted(f"api-health {i}".encode() for i in range(MESSAGES))
    other = KafkaAdminClient(bootstrap_servers=mirror, **access.kafka_python("dagger-allocations", "mirror", lab))
    try:
        assert other.describe_topics([copy])[0]["error_code"] == TOPIC_AUTHORIZATION_FAILED
    finally:
        other.close()
