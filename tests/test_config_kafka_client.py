"""Kafka client settings in a job reach a consumer (and a producer) on the team's machines, so
only an allow-list of them passes: security, TLS, timeouts and sizes, never a setting that names
a class to load, a configuration provider or a URL the client would fetch."""

from __future__ import annotations

import pytest

from dagger_runtime.config import ConfigError
from tests.test_config import KAFKA_SINK, load_data, minimal, problems_of, with_kafka

SCRAM = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="dagger" password="p";'


def sasl(jaas: str, mechanism: str = "SCRAM-SHA-512") -> dict:
    return with_kafka(client={"security.protocol": "SASL_SSL", "sasl.mechanism": mechanism, "sasl.jaas.config": jaas})


def problem_text(tmp_path, data, env=None) -> str:
    return "\n".join(problems_of(tmp_path, data, env=env))


@pytest.mark.parametrize(
    "key, value",
    [
        ("sasl.login.class", "com.example.Evil"),  # a class to load
        ("sasl.client.callback.handler.class", "com.example.Evil"),
        ("ssl.engine.factory.class", "com.example.Evil"),
        ("metric.reporters", "com.example.Evil"),
        ("config.providers", "fileprovider"),  # reads any file into the config
        ("config.providers.file.class", "org.apache.kafka.common.config.provider.FileConfigProvider"),
        ("sasl.oauthbearer.token.endpoint.url", "file:///etc/shadow"),  # a URL the client fetches
        ("sasl.oauthbearer.jwks.endpoint.url", "http://169.254.169.254/"),
        ("partition.assignment.strategy", "com.example.Evil"),
        ("security.providers", "com.example.Evil"),
    ],
)
def test_settings_that_load_classes_or_fetch_urls_are_refused_by_name(tmp_path, key, value):
    text = problem_text(tmp_path, with_kafka(client={key: value}))
    assert f"streams[0].kafka.client.{key}: is not a Kafka client setting a dagger passes on" in text
    assert value not in text


def test_a_misspelled_setting_gets_the_allowed_one_suggested(tmp_path):
    text = problem_text(tmp_path, with_kafka(client={"fetch.max.byte": "1048576"}))
    assert (
        "streams[0].kafka.client.fetch.max.byte: is not a Kafka client setting a dagger passes on; "
        "did you mean 'fetch.max.bytes'?" in text
    )


def test_consumer_and_producer_settings_are_allowed_where_they_belong(tmp_path):
    job = load_data(tmp_path, with_kafka(client={"max.poll.records": "500", "isolation.level": "read_committed"}))
    assert job.streams[0].kafka.client["isolation.level"] == "read_committed"
    sink = {"type": "kafka", "kafka": {**KAFKA_SINK, "client": {"acks": "all", "compression.type": "zstd"}}}
    assert load_data(tmp_path, minimal(sink=sink)).sink.kafka.client["acks"] == "all"
    # a consumer setting on the producer (and the other way) is refused
    sink["kafka"]["client"] = {"max.poll.records": "500"}
    assert "sink.kafka.client.max.poll.records: is not a Kafka client setting" in problem_text(
        tmp_path, minimal(sink=sink)
    )
    assert "streams[0].kafka.client.acks: is not a Kafka client setting" in problem_text(
        tmp_path, with_kafka(client={"acks": "all"})
    )


def test_the_jaas_login_module_must_be_the_mechanisms_own(tmp_path):
    assert (
        load_data(tmp_path, sasl(SCRAM)).streams[0].kafka.client_secrets["sasl.jaas.config"].get_secret_value() == SCRAM
    )
    jndi = 'com.sun.security.auth.module.JndiLoginModule required user.provider.url="ldap://x/" group.provider.url="x";'
    text = problem_text(tmp_path, sasl(jndi))
    assert (
        "sasl.jaas.config: sasl.mechanism SCRAM-SHA-512 takes "
        "org.apache.kafka.common.security.scram.ScramLoginModule, not another class" in text
    )
    assert "ldap" not in text  # a secret's value is never quoted
    plain = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";'
    assert (
        "takes org.apache.kafka.common.security.scram.ScramLoginModule, not "
        "org.apache.kafka.common.security.plain.PlainLoginModule" in problem_text(tmp_path, sasl(plain))
    )
    assert load_data(tmp_path, sasl(plain, "PLAIN")).streams[0].kafka.client["sasl.mechanism"] == "PLAIN"


@pytest.mark.parametrize(
    "jaas",
    [
        SCRAM + " com.sun.security.auth.module.JndiLoginModule required;",  # a second entry
        SCRAM[:-1],  # no closing ';'
        'org.apache.kafka.common.security.scram.ScramLoginModule required a=//x; b="c";',
        'org.apache.kafka.common.security.scram.ScramLoginModule /* c */ required username="d";',
        'org.apache.kafka.common.security.scram.ScramLoginModule required username="d\x00";',
        "org.apache.kafka.common.security.scram.ScramLoginModule\u00a0required;",  # not a blank to Kafka
    ],
)
def test_a_jaas_config_is_exactly_one_entry(tmp_path, jaas):
    text = problem_text(tmp_path, sasl(jaas))
    assert "streams[0].kafka.client.sasl.jaas.config:" in text and "Jndi" not in text


def test_a_jaas_config_from_the_environment_is_checked_once_resolved(tmp_path):
    data = sasl("${KAFKA_JAAS}")
    job = load_data(tmp_path, data, env={"KAFKA_JAAS": SCRAM})
    assert job.streams[0].kafka.client_secrets["sasl.jaas.config"].get_secret_value() == SCRAM
    jndi = "com.sun.security.auth.module.JndiLoginModule required;"
    with pytest.raises(ConfigError) as e:
        load_data(tmp_path, data, env={"KAFKA_JAAS": jndi})
    assert "not another class" in str(e.value)


def test_control_characters_in_a_setting_are_refused_but_pem_lines_are_kept(tmp_path):
    assert "streams[0].kafka.client.client.id: must not contain control characters" in problem_text(
        tmp_path, with_kafka(client={"client.id": "a\nsasl.login.class=x"})
    )
    pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----"
    job = load_data(
        tmp_path,
        with_kafka(
            client={"security.protocol": "SSL", "ssl.truststore.type": "PEM", "ssl.truststore.certificates": pem}
        ),
    )
    assert job.streams[0].kafka.client["ssl.truststore.certificates"] == pem
