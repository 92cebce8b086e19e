"""Step 2 and 3 of a new dagger in the portal: as the analyst types, the portal's Spark runs
`dagger validate`'s checks on the draft and answers with the output columns, or each problem at its
field or at its line and column in the query. A hand-made request reaches only the viewer's team,
its granted topics and the stream the draft declares; a change without the session's CSRF token is
refused."""

from __future__ import annotations

import re
import time

import pytest

from dagger_runtime.errors import DaggerError
from portal.app import create_app
from portal.config import PortalConfig
from portal.workbench import Workbench
from tests.test_portal import (  # the portal's fixtures: one way to sign in
    _secret_file,
    _signed_in,
    registry,  # noqa: F401 - the fixture
)

pytestmark = pytest.mark.spark

QUERY = """SELECT S2Id(lat, long, 13) AS s2id,
       COUNT(1) AS bookings,
       TUMBLE_END(rowtime, INTERVAL '60' SECOND) AS window_timestamp
FROM `data_stream`
WHERE status = 'COMPLETED'
GROUP BY TUMBLE(rowtime, INTERVAL '60' SECOND), S2Id(lat, long, 13)"""


@pytest.fixture
def app(tmp_path, registry, spark):  # noqa: F811
    config = PortalConfig.load(
        url="http://127.0.0.1:23080",
        issuer="http://127.0.0.1:23180/realms/daggers",
        client_id="dagger-portal",
        client_secret_file=_secret_file(tmp_path, "s", "x" * 40),
        session_key_file=_secret_file(tmp_path, "k", "y" * 48),
        registry_url=registry.where,
        clusters_dir=str(tmp_path),
        kafka="127.0.0.1:19192",
        influx_url="http://127.0.0.1:23086",
        postgres="127.0.0.1:23432",
    )
    app = create_app(config, registry=registry, workbench=Workbench(spark))
    app.config["TESTING"] = True
    return app


def _token(client) -> str:
    return re.search(r'id="csrf" value="([^"]+)"', client.get("/daggers/new").get_data(as_text=True)).group(1)


def _validate(client, token=None, **over):
    form = {
        "team": "allocations",
        "name": "my-surge",
        "input": "esb-critical/GO_RIDE-booking-log",
        "query": QUERY,
        "watermark_delay": "60s",
        "parallelism": 1,
        "sink": {"type": "influx", "name": "surge"},
    }
    form.update(over)
    token = token or _token(client)
    return client.post("/api/drafts/validate", json=form, headers={"X-CSRFToken": token})


def test_step_one_shows_the_teams_topics_with_their_message_and_fields(app):
    client = _signed_in(app, teams=["allocations"])
    page = client.get("/daggers/new").get_data(as_text=True)
    assert "GO_RIDE-booking-log" in page and "gojek.esb.booking.BookingLogMessage" in page
    assert "event_timestamp" in page
    # fields from the descriptor set: the booking message's own
    for field in ("order_number", "status", "event_timestamp"):
        assert f"<code>{field}</code>" in page
    assert "api-gateway-log" not in page and "p-logstream-" not in page
    # another team's page by hand: not found, as for no team
    assert client.get("/daggers/new?team=api-health").status_code == 404
    assert client.get("/daggers/new?team=payments").status_code == 404


def test_a_valid_draft_answers_with_its_output_columns(app):
    client = _signed_in(app, teams=["allocations"])
    answer = _validate(client)
    assert answer.status_code == 200, answer.json
    assert answer.json["valid"] is True
    assert [(c["name"], c["type"]) for c in answer.json["columns"]] == [
        ("s2id", "string"),
        ("bookings", "bigint"),
        ("window_timestamp", "timestamp"),
    ]


def test_a_misspelt_column_is_shown_at_its_line_and_column(app):
    client = _signed_in(app, teams=["allocations"])
    query = QUERY.replace("WHERE status", "WHERE statuz")
    answer = _validate(client, query=query).json
    assert answer["valid"] is False
    (error,) = answer["errors"]
    line = next(n for n, text in enumerate(query.splitlines(), start=1) if "statuz" in text)
    column = query.splitlines()[line - 1].index("statuz") + 1
    assert (error["kind"], error["line"], error["column"]) == ("sql", line, column), error
    assert "statuz" in error["message"]


@pytest.mark.parametrize(
    "source",
    [
        "`other_table`",
        "parquet.`/etc`",
        "`data_stream`, `information_schema`.`tables`",
        "json.`/tmp`",
        "(SELECT * FROM `global_temp`.`x`)",
    ],
)
def test_a_query_reads_its_own_stream_and_nothing_else(app, source):
    client = _signed_in(app, teams=["allocations"])
    query = (
        f"SELECT COUNT(1) AS n, TUMBLE_END(rowtime, INTERVAL '60' SECOND) AS w FROM {source} "
        "GROUP BY TUMBLE(rowtime, INTERVAL '60' SECOND)"
    )
    answer = _validate(client, query=query)
    assert answer.status_code == 200 and answer.json["valid"] is False, answer.json


def test_the_sink_is_checked_as_validate_checks_it(app):
    client = _signed_in(app, teams=["allocations"])
    # an InfluxDB point needs a time: a query without a window's timestamp cannot be written there
    answer = _validate(client, query="SELECT order_number FROM `data_stream`").json
    assert answer["valid"] is False and answer["errors"][0]["kind"] in ("job", "sql", "config")
    assert _validate(client, query="SELECT order_number FROM `data_stream`", sink={"type": "log"}).json["valid"]


def test_a_hand_made_request_reaches_only_the_viewers_team_and_topics(app):
    client = _signed_in(app, teams=["allocations"])
    token = _token(client)
    assert _validate(client, token, team="api-health").status_code == 404
    assert _validate(client, token, team="../allocations").status_code == 404
    refused = _validate(client, token, input="logstream/p-logstream-*", topic_suffix="all")
    assert refused.status_code == 400 and [e["field"] for e in refused.json["errors"]] == ["input"]
    # an operator may check a draft for any team
    ops = _signed_in(app, operator=True, user="operator")
    assert (
        _validate(
            ops,
            team="api-health",
            input="logstream/p-logstream-*",
            topic_suffix="all",
            query="SELECT service, TUMBLE_END(rowtime, INTERVAL '60' SECOND) AS w FROM `data_stream` "
            "GROUP BY TUMBLE(rowtime, INTERVAL '60' SECOND), service",
            sink={"type": "log"},
        ).json["valid"]
        is True
    )


def test_a_check_without_the_sessions_csrf_token_is_refused(app):
    client = _signed_in(app, teams=["allocations"])
    assert client.post("/api/drafts/validate", json={"team": "allocations"}).status_code == 400
    other = _signed_in(app, teams=["allocations"], user="bob")
    assert _validate(client, token=_token(other)).status_code == 400


def test_a_check_past_its_time_limit_is_cancelled_and_the_spark_serves_on(spark):
    bench = Workbench(spark, timeout_s=1.0)
    began = time.monotonic()
    with pytest.raises(DaggerError, match="ran longer than 1 s and was stopped"):
        with bench._limited("preview"):
            spark.range(10**11).selectExpr("sum(id * 2)").collect()  # minutes, were it not cancelled
    assert time.monotonic() - began < 120  # cancelled: uncancelled, it runs for many minutes
    assert bench._alive() and spark.range(3).count() == 3
