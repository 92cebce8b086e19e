"""A dagger written in the portal's three steps becomes a job file by the platform's rules, and the
form can choose only among the team's own inputs and names: another team's topic, a topic outside
the team's prefix, a sink elsewhere than the team's own database or a name that would reach a path
or a command are refused, field by field."""

from __future__ import annotations

import os

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from dagger_runtime.errors import DaggerError
from infra import spec
from infra.topics import CatalogueError, message_problems, parse_catalogue
from portal import drafts, team_secrets
from portal.platform_rules import RULES
from protos import registry as protos
from tests.filter_plugins import plugin as filter_plugin

SERVERS = drafts.Servers("127.0.0.1:19192", "http://127.0.0.1:23086", ("127.0.0.1", 23432))
QUERY = "SELECT COUNT(1) AS n FROM `data_stream` GROUP BY TUMBLE(rowtime, INTERVAL '1' MINUTE)"


@pytest.fixture(scope="module")
def catalogue():
    return [t for c in spec.load_platform().kafka_clusters.values() for t in c.topics]


def _inputs(catalogue, team="allocations", clusters=("esb-critical", "mainstream", "logstream")):
    return drafts.inputs(catalogue, team, clusters)


def _form(**over):
    form = {
        "name": "my-surge",
        "input": "esb-critical/GO_RIDE-booking-log",
        "query": QUERY,
        "sink": {"type": "influx", "name": "surge"},
    }
    form.update(over)
    return form


def _refused(catalogue, team="allocations", **over) -> dict[str, str]:
    with pytest.raises(drafts.DraftError) as e:
        drafts.job(_form(**over), team=team, granted=_inputs(catalogue, team), servers=SERVERS, rules=RULES)
    return {p["field"]: p["message"] for p in e.value.problems}


def test_a_team_is_offered_what_the_catalogue_grants_it_on_its_clusters(catalogue):
    keys = {i.key for i in _inputs(catalogue)}
    # granted to allocations (its own, or readers: [allocations]); internal topics of others are not
    assert {
        "esb-critical/GO_RIDE-booking-log",
        "esb-critical/driver-location-ping",
        "mainstream/booking-events-*",
    } <= keys
    assert "logstream/api-gateway-log*" not in keys and "logstream/p-logstream-*" not in keys
    # the same topics on a cluster the grant does not give: none
    assert _inputs(catalogue, clusters=("logstream",)) == []
    health = {i.key for i in _inputs(catalogue, "api-health")}
    assert health == {"logstream/api-gateway-log*", "logstream/p-logstream-*"}
    booking = next(i for i in _inputs(catalogue) if i.topic == "GO_RIDE-booking-log")
    assert (booking.message, booking.event_time) == ("gojek.esb.booking.BookingLogMessage", "event_timestamp")


def test_the_job_follows_the_platforms_rules_not_the_form(catalogue):
    job = drafts.job(
        _form(kafka={"bootstrap_servers": "evil:9092"}, team="payments"),
        team="allocations",
        granted=_inputs(catalogue),
        servers=SERVERS,
        rules=RULES,
    )
    stream = job["streams"][0]
    assert job["team"] == "allocations" and stream["topics"] == ["GO_RIDE-booking-log"]
    assert stream["kafka"]["bootstrap_servers"] == "127.0.0.1:19192"
    assert stream["kafka"]["group_id"] == "dagger-allocations--my-surge"
    assert 'username="dagger-allocations"' in stream["kafka"]["client"]["sasl.jaas.config"]
    assert "${DAGGER_SECRET_ALLOCATIONS__KAFKA_PASSWORD}" in stream["kafka"]["client"]["sasl.jaas.config"]
    assert job["sink"]["influx"] == {
        "url": "http://127.0.0.1:23086",
        "db_name": "allocations",
        "measurement_name": "surge",
        "username": "dagger-allocations",
        "password": "${DAGGER_SECRET_ALLOCATIONS__INFLUX_PASSWORD}",
    }
    assert job["dead_letter_topic"] == "allocations--my-surge-dlq"
    kafka = drafts.job(
        _form(sink={"type": "kafka", "name": "surge-out"}),
        team="allocations",
        granted=_inputs(catalogue),
        servers=SERVERS,
        rules=RULES,
    )["sink"]["kafka"]
    assert kafka["topic"] == "allocations--surge-out" and kafka["brokers"] == "127.0.0.1:19192"
    pg = drafts.job(
        _form(sink={"type": "postgres", "name": "surge"}),
        team="allocations",
        granted=_inputs(catalogue),
        servers=SERVERS,
        rules=RULES,
    )["sink"]["postgres"]
    assert pg["url"] == "postgresql://127.0.0.1:23432/allocations" and pg["user"] == "dagger-allocations"


def test_another_teams_topic_is_refused_by_any_spelling(catalogue):
    for key in (
        "logstream/api-gateway-log*",
        "logstream/p-logstream-*",
        "esb-critical/payment-*",
        "esb-critical/GO_RIDE-booking-log ",
        "ESB-CRITICAL/GO_RIDE-booking-log",
        "GO_RIDE-booking-log",
        ["esb-critical/GO_RIDE-booking-log"],
        None,
    ):
        assert set(_refused(catalogue, input=key)) == {"input"}, key
    # api-health may not read the bookings either
    assert "input" in _refused(catalogue, team="api-health")


def test_a_prefix_needs_the_rest_of_a_topics_name_and_nothing_else(catalogue):
    job = drafts.job(
        _form(input="mainstream/booking-events-*", topic_suffix="go-ride"),
        team="allocations",
        granted=_inputs(catalogue),
        servers=SERVERS,
        rules=RULES,
    )
    assert job["streams"][0]["topics"] == ["booking-events-go-ride"]
    for rest in (None, "", "a,b", "x|.*", "x y", "../x", "a" * 201):
        assert set(_refused(catalogue, input="mainstream/booking-events-*", topic_suffix=rest)) == {"topic_suffix"}, (
            rest
        )


@pytest.mark.parametrize("name", ["My-surge", "a", "x--y", "-x", "x-", "x_y", "x y", "x/../y", "é-x", "a" * 65, 7])
def test_a_bad_dagger_name_is_refused(catalogue, name):
    assert set(_refused(catalogue, name=name)) == {"name"}


@pytest.mark.parametrize(
    "sink,field",
    [
        ({"type": "influx", "name": "Surge"}, "sink.name"),
        ({"type": "influx", "name": 'x" ; DROP'}, "sink.name"),
        ({"type": "postgres", "name": "public.other"}, "sink.name"),
        ({"type": "postgres", "name": '"quoted"'}, "sink.name"),
        ({"type": "kafka", "name": "../api-health-x"}, "sink.name"),
        ({"type": "kafka", "name": "X"}, "sink.name"),
        # '--' ends a team's name in its topics: 'lab--events' would be team growth-lab's (growth's reader's)
        ({"type": "kafka", "name": "lab--events"}, "sink.name"),
        ({"type": "kafka", "name": "events-"}, "sink.name"),
        ({"type": "file", "name": "x"}, "sink.type"),
        ("log", "sink.type"),
    ],
)
def test_a_sink_outside_the_teams_own_is_refused(catalogue, sink, field):
    assert set(_refused(catalogue, sink=sink)) == {field}


def test_every_wrong_field_is_named_at_once(catalogue):
    assert set(
        _refused(catalogue, name="X", query=" ", watermark_delay="1h; rm", parallelism=True, sink={"type": "kafka"})
    ) == {"name", "query", "watermark_delay", "parallelism", "sink.name"}


def test_the_catalogue_says_what_a_topic_holds_and_is_checked_against_the_schemas():
    entry = {
        "name": "t",
        "owner": "booking",
        "sensitivity": "internal",
        "criticality": "low",
        "contact": "@o/t",
        "message": "gojek.esb.booking.BookingLogMessage",
        "event_time": "event_timestamp",
    }
    (topic,) = parse_catalogue("c", [entry])
    assert (topic.message, topic.event_time) == ("gojek.esb.booking.BookingLogMessage", "event_timestamp")
    for bad in (
        {"message": "Booking"},
        {"message": "a.b; x"},
        {"event_time": "a.b"},
        {"message": None, "event_time": "event_timestamp"},
    ):
        with pytest.raises(CatalogueError):
            parse_catalogue("c", [{**entry, **bad}])
    ds = protos.load()
    assert message_problems(parse_catalogue("c", [entry]), ds) == []
    (unknown,) = parse_catalogue("c", [{**entry, "message": "gojek.esb.booking.NoSuchMessage"}])
    assert "not in the protobuf descriptor set" in message_problems([unknown], ds)[0]
    # the event time must be a Timestamp: order_number is a string, customer_id too
    (wrong,) = parse_catalogue("c", [{**entry, "event_time": "order_number"}])
    assert "is not a google.protobuf.Timestamp field" in message_problems([wrong], ds)[0]
    (missing,) = parse_catalogue("c", [{**entry, "event_time": "no_such_field"}])
    assert "is not a google.protobuf.Timestamp field" in message_problems([missing], ds)[0]


def test_the_portal_takes_the_teams_secrets_from_a_private_folder_only(tmp_path, monkeypatch):

    folder = tmp_path / "team-secrets"
    folder.mkdir(mode=0o700)
    secret = folder / "DAGGER_SECRET_ALLOCATIONS__KAFKA_PASSWORD"
    secret.write_text("s3cret\n")
    secret.chmod(0o600)
    monkeypatch.delenv("DAGGER_SECRET_ALLOCATIONS__KAFKA_PASSWORD", raising=False)
    assert team_secrets.load(folder) == ["DAGGER_SECRET_ALLOCATIONS__KAFKA_PASSWORD"]
    assert os.environ["DAGGER_SECRET_ALLOCATIONS__KAFKA_PASSWORD"] == "s3cret"
    monkeypatch.delenv("DAGGER_SECRET_ALLOCATIONS__KAFKA_PASSWORD")
    secret.chmod(0o640)
    with pytest.raises(DaggerError, match="may be read by others"):
        team_secrets.load(folder)
    secret.chmod(0o600)
    folder.chmod(0o755)
    with pytest.raises(DaggerError, match="make it 0700"):
        team_secrets.load(folder)
    folder.chmod(0o700)
    for odd in ("PATH", "DAGGER_SECRET_X", "dagger_secret_a__b", "DAGGER_SECRET_A__B.txt"):
        stray = folder / odd
        stray.write_text("x")
        stray.chmod(0o600)
        with pytest.raises(DaggerError, match="only files named"):
            team_secrets.load(folder)
        stray.unlink()
    (folder / "DAGGER_SECRET_A__LINK").symlink_to(secret)
    with pytest.raises(DaggerError, match="only files named"):
        team_secrets.load(folder)


def test_a_preview_needs_the_teams_own_kafka_password(monkeypatch):
    monkeypatch.setenv("DAGGER_SECRET_ALLOCATIONS__KAFKA_PASSWORD", "pw")
    monkeypatch.delenv("DAGGER_SECRET_API_HEALTH__KAFKA_PASSWORD", raising=False)
    login = RULES.kafka_login("allocations")
    assert (login["sasl_plain_username"], login["sasl_plain_password"]) == ("dagger-allocations", "pw")
    with pytest.raises(DaggerError, match="no Kafka password for team api-health"):
        RULES.kafka_login("api-health")


def test_the_labs_portal_is_given_each_teams_three_passwords(tmp_path):
    plugin = filter_plugin("portal_secrets")
    got = plugin.portal_team_secrets(["allocations", "api-health"], str(tmp_path))
    assert {g["name"]: g["file"] for g in got} == {
        "DAGGER_SECRET_ALLOCATIONS__KAFKA_PASSWORD": f"{tmp_path}/secrets/kafka/primary/dagger-allocations.password",
        "DAGGER_SECRET_ALLOCATIONS__PG_PASSWORD": f"{tmp_path}/secrets/postgresql/dagger-allocations.password",
        "DAGGER_SECRET_ALLOCATIONS__INFLUX_PASSWORD": f"{tmp_path}/secrets/influxdb/dagger-allocations.password",
        "DAGGER_SECRET_API_HEALTH__KAFKA_PASSWORD": f"{tmp_path}/secrets/kafka/primary/dagger-api-health.password",
        "DAGGER_SECRET_API_HEALTH__PG_PASSWORD": f"{tmp_path}/secrets/postgresql/dagger-api-health.password",
        "DAGGER_SECRET_API_HEALTH__INFLUX_PASSWORD": f"{tmp_path}/secrets/influxdb/dagger-api-health.password",
    }

    for bad in (["../x"], ["Allocations"], ["a--b"]):
        with pytest.raises(AnsibleFilterError):
            plugin.portal_team_secrets(bad, str(tmp_path))


def test_an_edit_changes_the_query_and_watermark_delay_and_nothing_else():
    spec = yaml.safe_dump(
        {
            "name": "surge",
            "team": "allocations",
            "streams": [{"table": "data_stream"}],
            "sql": "SELECT 1",
            "watermark_delay": "60s",
            "sink": {"type": "log"},
        }
    )
    job = drafts.edited(
        spec,
        ".yaml",
        {
            "query": "SELECT 2",
            "watermark_delay": "3m",
            "team": "api-health",
            "sink": {"type": "kafka"},
            "name": "other",
        },
    )
    assert job == {
        "name": "surge",
        "team": "allocations",
        "streams": [{"table": "data_stream"}],
        "sql": "SELECT 2",
        "watermark_delay": "3m",
        "sink": {"type": "log"},
    }
    assert drafts.edited(spec, ".yaml", {"query": "SELECT 3"})["watermark_delay"] == "60s"
    for form, field in (
        ({"query": ""}, "query"),
        ({"query": "x" * 20_001}, "query"),
        ({"query": "SELECT 1", "watermark_delay": "1h"}, "watermark_delay"),
    ):
        with pytest.raises(drafts.DraftError) as e:
            drafts.edited(spec, ".yaml", form)
        assert [p["field"] for p in e.value.problems] == [field]
    assert drafts.editable("sql: SELECT 1\nschema: {version: 4957b56c57da625e}\n", ".yaml")["schema"] == {
        "version": "4957b56c57da625e"
    }
    # descriptors fetched from elsewhere would be fetched by the portal's process: refused
    stencil = "sql: SELECT 1\nschema: {enabled: true, stencil_urls: ['file:///etc/passwd']}\n"
    for text, fmt in (
        ("SQL_QUERY=SELECT 1\n", ".properties"),
        ("- a list", ".yaml"),
        ("name: x\n", ".yaml"),
        ("sql: [1]\n", ".yaml"),
        ("{", ".yaml"),
        (stencil, ".yaml"),
        ("sql: x\nschema: 7\n", ".yaml"),
    ):
        with pytest.raises(drafts.DraftError):
            drafts.editable(text, fmt)


@pytest.mark.parametrize(
    "query",
    [
        "SELECT a,\n  b\nFROM `data_stream`",
        "  SELECT 1\n",
        "SELECT '#x' -- c\n\n",
        "a\tb\nc",
        "x\r\ny",
        "SELECT 'é\u2028'\nFROM t",
        "key: value\n- item",
        "|\n>",
        "SELECT 1 ",
        "\nSELECT 1",
    ],
)
def test_the_job_file_holds_the_query_exactly_and_a_multi_line_one_as_a_block(query):
    text = drafts.spec_text({"name": "x", "sql": query})
    assert yaml.safe_load(text) == {"name": "x", "sql": query}
    if query == "SELECT a,\n  b\nFROM `data_stream`":
        assert "sql: |-\n  SELECT a,\n    b\n  FROM `data_stream`\n" in text


def test_a_draft_pins_the_descriptor_set_its_fields_were_read_from(catalogue):
    pinned = drafts.job(
        _form(),
        team="allocations",
        granted=_inputs(catalogue, "allocations"),
        servers=SERVERS,
        rules=RULES,
        schema_version="9fae205e62ef1a12",
    )
    assert pinned["schema"] == {"version": "9fae205e62ef1a12"}
    assert "schema" not in drafts.job(
        _form(), team="allocations", granted=_inputs(catalogue, "allocations"), servers=SERVERS, rules=RULES
    )
