"""An analyst's new dagger, all in the portal on the lab, by the API its pages call (the browser's
own path is tests/test_portal_browser.py): signed in as allocations' analyst, the input is one of
the team's catalogue topics (booking-events-*, created here), the query checked, previewed on the
topic's latest messages, deployed to the team's cluster on blue, followed to its first window in the
team's InfluxDB database, its query edited (the next version), and stopped; the audit trail names
the analyst. Another team's analyst
can neither preview on that topic nor see, nor stop, the dagger. Counts are computed here from the
bookings sent (tests/reference.py)."""

from __future__ import annotations

import datetime as dt
import re
import time
import uuid
from pathlib import Path

import pytest
from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic

from dagger_runtime import launches
from dagger_runtime.lifecycle.registry import Registry
from lab import access
from loadtest import traffic
from protos import registry as protos
from tests.labrun import team_influx
from tests.reference import group, iso, window_end
from tests.test_portal_sign_in import Portal

pytestmark = [pytest.mark.e2e, pytest.mark.kafka, pytest.mark.spark]
TEAM = "allocations"
QUERY = """SELECT city_id AS tag_city_id,
       COUNT(1) AS bookings,
       TUMBLE_END(rowtime, INTERVAL '60' SECOND) AS window_timestamp
FROM `data_stream`
WHERE status = 'COMPLETED'
GROUP BY TUMBLE(rowtime, INTERVAL '60' SECOND), city_id"""


@pytest.fixture(scope="module")
def setup(lab_env):
    portal = Portal(lab_env)
    base = int(lab_env["DAGGER_LAB_PORT_BASE"])
    servers = ",".join(f"127.0.0.1:{base + 100 * n + 92}" for n in (1, 2, 3))
    run = uuid.uuid4().hex[:6]
    topic = f"booking-events-portal-{run}"
    admin = KafkaAdminClient(bootstrap_servers=servers, **access.kafka_python("admin", lab=portal.lab))
    admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=3)])
    admin.close()
    registry = Registry((portal.lab / "secrets" / "registry.url").read_text().strip())
    yield {
        "portal": portal,
        "servers": servers,
        "topic": topic,
        "name": f"portal-made-{run}",
        "base": base,
        "registry": registry,
        "measurement": f"portal_made_{run}",
    }
    registry.close()


def _send(setup, events) -> None:
    producer = KafkaProducer(
        bootstrap_servers=setup["servers"], acks="all", **access.kafka_python("admin", lab=setup["portal"].lab)
    )
    message = protos.load().message_class(traffic.BOOKING)
    for i, value in enumerate(traffic.encode(events, message)):
        producer.send(setup["topic"], value=value, partition=i % 2)
    producer.flush()
    producer.close()


def _token(session, portal) -> str:
    page = session.get(f"{portal.url}/daggers/new", timeout=30).text
    return re.search(r'id="csrf" value="([^"]+)"', page).group(1)


def _form(setup, **over) -> dict:
    form = {
        "team": TEAM,
        "name": setup["name"],
        "input": "mainstream/booking-events-*",
        "topic_suffix": setup["topic"].removeprefix("booking-events-"),
        "query": QUERY,
        "watermark_delay": "60s",
        "parallelism": 1,
        "sink": {"type": "influx", "name": setup["measurement"]},
    }
    form.update(over)
    return form


def _post(session, portal, path, body, token):
    return session.post(
        f"{portal.url}{path}", json=body, timeout=300, headers={"X-CSRFToken": token, "Origin": portal.url}
    )


def _influx_rows(setup) -> dict:
    series = team_influx(
        setup["portal"].lab,
        setup["base"],
        TEAM,
        f'SELECT "bookings" FROM "{setup["measurement"]}" GROUP BY "tag_city_id"',
    )
    return {(int(s["tags"]["tag_city_id"]), t): n for s in series for t, n in s["values"]}


def test_an_analyst_creates_previews_deploys_follows_and_stops_a_dagger(setup):
    portal = setup["portal"]
    # the topic already holds bookings: the preview reads its latest
    before = traffic.bookings(200, minutes=2, seed=81)
    _send(setup, before)
    analyst = portal.sign_in(access.analyst(TEAM))
    token = _token(analyst, portal)
    checked = _post(analyst, portal, "/api/drafts/validate", _form(setup), token)
    assert checked.status_code == 200 and checked.json()["valid"], checked.text
    preview = _post(analyst, portal, "/api/drafts/preview", _form(setup), token)
    assert preview.status_code == 200 and preview.json()["valid"], preview.text
    completed = [e for e in before if e["status"] == "COMPLETED"]
    want = group(completed, key=lambda e: (e["city_id"], iso(window_end(e["event_timestamp"], 60))), agg=len)
    got = {(r["tag_city_id"], r["window_timestamp"]): r["bookings"] for r in preview.json()["rows"]}
    assert got == want and preview.json()["read"] == 200

    # another team may not preview on allocations' topic, nor name allocations as its team
    other = portal.sign_in(access.analyst("api-health"))
    other_token = _token(other, portal)
    assert _post(other, portal, "/api/drafts/preview", _form(setup), other_token).status_code == 404
    refused = _post(other, portal, "/api/drafts/preview", _form(setup, team="api-health"), other_token)
    assert refused.status_code == 400 and [e["field"] for e in refused.json()["errors"]] == ["input"]

    deployed = _post(analyst, portal, "/api/drafts/deploy", _form(setup, cluster="blue"), token)
    assert deployed.status_code == 200 and deployed.json()["dagger"] == setup["name"], deployed.text
    try:
        dagger = setup["registry"].get(setup["name"])
        assert dagger.team == TEAM and dagger.cluster == "blue"
        assert setup["registry"].versions(setup["name"])[0].deployed_by == f"{access.analyst(TEAM)} (portal)"
        # reading from the latest offsets: bookings sent once its first batch is committed count
        deadline = time.monotonic() + 300
        while launches.last_committed_batch(Path(dagger.checkpoint)) < 0 and time.monotonic() < deadline:
            time.sleep(2)
        assert launches.last_committed_batch(Path(dagger.checkpoint)) >= 0, "no batch committed in 300 s"
        after = traffic.bookings(200, minutes=2, seed=82)
        start = traffic.START + dt.timedelta(hours=1)  # a later hour than the preview's bookings
        after = [{**e, "event_timestamp": e["event_timestamp"] - traffic.START + start} for e in after]
        closer = {
            **after[-1],
            "order_number": "closer",
            "status": "CREATED",
            "event_timestamp": start + dt.timedelta(minutes=5),
        }
        _send(setup, after + [closer])
        completed = [e for e in after if e["status"] == "COMPLETED"]
        want = {
            (city, iso(t)): n
            for (city, t), n in group(
                completed, key=lambda e: (e["city_id"], window_end(e["event_timestamp"], 60)), agg=len
            ).items()
        }
        # the dagger's page follows it to its first window: its API's rows written, then InfluxDB's rows
        deadline, written = time.monotonic() + 300, None
        while time.monotonic() < deadline:
            status = analyst.get(f"{portal.url}/api/daggers/{setup['name']}", timeout=30).json()["status"] or {}
            written = status.get("rows_written")
            if written:
                break
            time.sleep(3)
        assert written, f"no row written in 300 s: {status}"
        deadline = time.monotonic() + 120
        while _influx_rows(setup) != want and time.monotonic() < deadline:
            time.sleep(3)
        assert _influx_rows(setup) == want
        # its page: the last hour's charts from Prometheus and its alerts (none firing)
        page = analyst.get(f"{portal.url}/daggers/{setup['name']}", timeout=30).text
        assert page.count('<figure class="chart"') == 4 and "cannot be read now" not in page, page[-2000:]
        assert 'id="no-alerts"' in page or 'id="alerts"' in page
        # edit: the query's next version, through `dagger edit`'s operation, by the analyst
        changed = QUERY.replace("WHERE status = 'COMPLETED'", "WHERE status IN ('COMPLETED', 'CUSTOMER_CANCELLED')")
        misspelt = changed.replace("city_id", "cty")
        bad = _post(analyst, portal, f"/api/daggers/{setup['name']}/validate", {"query": misspelt}, token)
        assert bad.status_code == 200 and bad.json()["valid"] is False, bad.text
        (error,) = bad.json()["errors"]
        assert "cty" in misspelt.splitlines()[error["line"] - 1][error["column"] - 1 :], error
        edited = _post(analyst, portal, f"/api/daggers/{setup['name']}/edit", {"query": changed}, token)
        assert edited.status_code == 200 and edited.json()["valid"], edited.text
        versions = setup["registry"].versions(setup["name"])
        assert len(versions) == 2 and versions[-1].deployed_by == f"{access.analyst(TEAM)} (portal)"
        diff = analyst.get(f"{portal.url}/daggers/{setup['name']}/diff", timeout=30).text
        assert "IN (&#39;COMPLETED&#39;, &#39;CUSTOMER_CANCELLED&#39;)" in diff
        # the other team: not found, by page and API, and may neither edit nor stop it
        assert (
            _post(other, portal, f"/api/daggers/{setup['name']}/edit", {"query": changed}, other_token).status_code
            == 404
        )
        for path in (f"/daggers/{setup['name']}", f"/api/daggers/{setup['name']}"):
            seen = other.get(portal.url + path, timeout=30)
            assert seen.status_code == 404 and setup["name"] not in seen.text
        stop_token = re.search(r'name="csrf_token" value="([^"]+)"', other.get(f"{portal.url}/daggers").text).group(1)
        assert (
            other.post(
                f"{portal.url}/daggers/{setup['name']}/stop",
                data={"csrf_token": stop_token},
                headers={"Origin": portal.url},
                timeout=60,
            ).status_code
            == 404
        )
        # the analyst may not fail it over (403: its team sees it); a platform operator moves it to
        # green, from its checkpoint, through `dagger failover`'s operation
        own_token = re.search(r'name="csrf_token" value="([^"]+)"', analyst.get(f"{portal.url}/daggers").text).group(1)
        assert (
            analyst.post(
                f"{portal.url}/daggers/{setup['name']}/failover",
                data={"csrf_token": own_token, "to": "spark/green"},
                headers={"Origin": portal.url},
                timeout=60,
            ).status_code
            == 403
        )
        operator = portal.sign_in(access.OPERATOR)
        page = operator.get(f"{portal.url}/daggers/{setup['name']}", timeout=30).text
        assert '<option value="spark/green">' in page and '<option value="spark/blue">' not in page
        op_token = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
        moved = operator.post(
            f"{portal.url}/daggers/{setup['name']}/failover",
            data={"csrf_token": op_token, "to": "spark/green"},
            headers={"Origin": portal.url},
            timeout=300,
            allow_redirects=False,
        )
        assert moved.status_code == 303
        assert setup["registry"].get(setup["name"]).cluster == "green" and setup["registry"].get(setup["name"]).running
        assert setup["registry"].history(setup["name"])[-1].actor == f"{access.OPERATOR} (portal)"
    finally:
        page = analyst.get(f"{portal.url}/daggers/{setup['name']}", timeout=30).text
        stop_token = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
        stopped = analyst.post(
            f"{portal.url}/daggers/{setup['name']}/stop",
            data={"csrf_token": stop_token},
            headers={"Origin": portal.url},
            timeout=180,
            allow_redirects=False,
        )
    assert stopped.status_code == 303
    assert setup["registry"].get(setup["name"]).status == "STOPPED"
    assert setup["registry"].history(setup["name"])[-1].actor == f"{access.analyst(TEAM)} (portal)"
