"""The portal in a real browser: Debian's chromium, driven by Selenium through Debian's chromedriver,
on the lab. An analyst signs in through Keycloak's page, lands on the team's daggers, reads one
whose query holds a script (shown as text, never run), and cannot open another team's dagger; then
writes a new dagger in the three steps and sees the query checked as it types, a misspelt column
at its line and column."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import time
import uuid
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from dagger_runtime import launches
from dagger_runtime.lifecycle.registry import Registry
from lab import access
from tests.labrun import team_influx

pytestmark = [pytest.mark.e2e]

SCRIPT = "<script>window.__pwned = 1</script>"


@pytest.fixture(scope="module")
def chromium():
    options = Options()
    options.binary_location = shutil.which("chromium")
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,900"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def probes(lab_env):
    """A stopped dagger of each team in the lab's registry; allocations' query holds a script, and
    so does the name of a third."""
    registry = Registry((Path(lab_env["DAGGER_LAB_DIR"]) / "secrets" / "registry.url").read_text().strip())
    names = {}
    for team in ("allocations", "api-health"):
        name = f"browser-probe-{team}-{uuid.uuid4().hex[:6]}"
        registry.record_version(
            name=name,
            team=team,
            cluster="blue",
            spec=f"name: {name}\nsql: SELECT 1 -- {SCRIPT}\n",
            spec_format=".yaml",
            spec_digest="0" * 64,
            state_key="k",
            checkpoint=f"/nowhere/{name}",
            start="latest",
            actor="test",
            submission_id=None,
            metrics_port=None,
            action="deploy",
        )
        registry.record_status(name, "STOPPED", actor="test", action="stop")
        names[team] = name
    # a name no deploy would take (dagger names are allow-listed), as if the registry held it anyway
    # (no '/': the name stays one path segment of its page's address)
    names["script"] = f"probe-<script>window.__pwned=1<img src=x onerror=window.__pwned=2>-{uuid.uuid4().hex[:6]}"
    registry.record_version(
        name=names["script"],
        team="allocations",
        cluster="blue",
        spec="sql: SELECT 1\n",
        spec_format=".yaml",
        spec_digest="0" * 64,
        state_key="k",
        checkpoint="/nowhere/probe",
        start="latest",
        actor="test",
        submission_id=None,
        metrics_port=None,
        action="deploy",
    )
    registry.record_status(names["script"], "STOPPED", actor="test", action="stop")
    yield names
    registry.close()


def _wait(driver, condition, timeout=60):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout).until(condition)


def _landed(driver, portal: str) -> str:
    """Who the team's daggers page says is signed in, once the provider's redirects have landed there.
    The address changes when the last redirect commits, before its page is parsed: wait for the
    header itself (the fresh-clone CI found it missing a moment after the address)."""
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec

    try:
        _wait(driver, ec.url_to_be(f"{portal}/daggers"))
        who = _wait(driver, ec.presence_of_element_located((By.CSS_SELECTOR, "header .who")))
    except TimeoutException:
        raise AssertionError(f"not signed in at {driver.current_url}: {driver.page_source[:2000]}") from None
    return who.get_attribute("data-user")


def test_an_analyst_signs_in_in_chromium_and_sees_scripts_as_text_and_nothing_of_another_team(
    lab_env, chromium, probes
):
    from selenium.webdriver.support import expected_conditions as ec

    base = int(lab_env["DAGGER_LAB_PORT_BASE"])
    portal = f"http://127.0.0.1:{base + 4080}"
    user = access.analyst("allocations")
    chromium.get(portal + "/")
    chromium.find_element(By.LINK_TEXT, "Sign in").click()
    _wait(chromium, ec.presence_of_element_located((By.ID, "username")))
    assert chromium.current_url.startswith(f"http://127.0.0.1:{base + 4180}/realms/daggers/")
    chromium.find_element(By.ID, "username").send_keys(user)
    chromium.find_element(By.ID, "password").send_keys(access.sign_in_password(user, Path(lab_env["DAGGER_LAB_DIR"])))
    chromium.find_element(By.ID, "kc-login").click()
    assert _landed(chromium, portal) == user

    # a dagger whose name holds a script: listed as text, by the page and by its live refresh
    for _ in range(2):
        assert probes["script"] in chromium.find_element(By.ID, "daggers").text
        assert chromium.execute_script("return window.__pwned") is None
        time.sleep(6)  # the table refreshes itself every 5 s from /api/daggers

    # its own dagger, whose query holds a script: shown as text, not run
    chromium.get(f"{portal}/daggers/{probes['allocations']}")
    assert SCRIPT in chromium.find_element(By.CSS_SELECTOR, "pre.spec").text
    assert chromium.execute_script("return window.__pwned") is None
    # another team's: not found, and nothing of it on the page
    chromium.get(f"{portal}/daggers/{probes['api-health']}")
    body = chromium.find_element(By.TAG_NAME, "body").text
    assert "Not found." in body and probes["api-health"] not in chromium.page_source

    # signing out ends the provider's session too: the next sign-in asks for the password again
    chromium.get(f"{portal}/daggers")
    chromium.find_element(By.CSS_SELECTOR, "header form button[type=submit]").click()
    _wait(chromium, ec.presence_of_element_located((By.ID, "kc-logout")))
    chromium.find_element(By.ID, "kc-logout").click()
    _wait(chromium, ec.url_to_be(f"{portal}/"))
    chromium.find_element(By.LINK_TEXT, "Sign in").click()
    _wait(chromium, ec.presence_of_element_located((By.ID, "username")))


def _sign_in(driver, lab_env, team: str) -> str:
    from selenium.webdriver.support import expected_conditions as ec

    base = int(lab_env["DAGGER_LAB_PORT_BASE"])
    portal = f"http://127.0.0.1:{base + 4080}"
    user = access.analyst(team)
    # every cookie, the provider's too (its session cookies are scoped to its realm's path)
    driver.execute_cdp_cmd("Network.clearBrowserCookies", {})
    driver.get(portal + "/auth/login")
    _wait(driver, ec.presence_of_element_located((By.ID, "username")))
    driver.find_element(By.ID, "username").send_keys(user)
    driver.find_element(By.ID, "password").send_keys(access.sign_in_password(user, Path(lab_env["DAGGER_LAB_DIR"])))
    driver.find_element(By.ID, "kc-login").click()
    assert _landed(driver, portal) == user
    return portal


def test_a_new_daggers_query_is_checked_as_the_analyst_types(lab_env, chromium):
    portal = _sign_in(chromium, lab_env, "allocations")
    chromium.get(portal + "/daggers/new")
    # step 1: the team's granted topics with their message and event-time field
    inputs = chromium.find_element(By.ID, "inputs").text
    assert "GO_RIDE-booking-log" in inputs and "gojek.esb.booking.BookingLogMessage" in inputs
    assert "p-logstream-" not in inputs
    chromium.find_element(By.CSS_SELECTOR, "input[value='esb-critical/GO_RIDE-booking-log']").click()
    chromium.find_element(By.ID, "name").send_keys("browser-draft")
    chromium.find_element(By.ID, "sink_name").send_keys("browser_draft")  # step 3: InfluxDB, the first offered
    query = chromium.find_element(By.ID, "query")
    query.send_keys(Keys.CONTROL, "a")
    query.send_keys(
        "SELECT COUNT(1) AS bookings,\n"
        "  TUMBLE_END(rowtime, INTERVAL '60' SECOND) AS window_timestamp\n"
        "FROM `data_stream` WHERE statuz = 'COMPLETED'\n"
        "GROUP BY TUMBLE(rowtime, INTERVAL '60' SECOND)"
    )
    # the portal's Spark may still be warming up after the lab's start: the first answer can take a while
    problem = _wait(
        chromium, lambda d: d.find_elements(By.CSS_SELECTOR, "#problems li.problem[data-line]"), timeout=240
    )[0]
    assert (problem.get_attribute("data-line"), problem.get_attribute("data-column")) == ("3", "26")
    assert "statuz" in problem.text
    # the fix: valid, with the output's columns
    query.send_keys(Keys.CONTROL, "a")
    query.send_keys(
        "SELECT COUNT(1) AS bookings,\n"
        "  TUMBLE_END(rowtime, INTERVAL '60' SECOND) AS window_timestamp\n"
        "FROM `data_stream` WHERE status = 'COMPLETED'\n"
        "GROUP BY TUMBLE(rowtime, INTERVAL '60' SECOND)"
    )
    _wait(chromium, lambda d: d.find_element(By.ID, "verdict").text.startswith("Valid"), timeout=60)
    columns = chromium.find_element(By.ID, "columns").text
    assert "bookings bigint" in columns and "window_timestamp timestamp" in columns
    # the preview reads the topic as the team: here it may hold nothing yet (a fresh lab has no
    # demo traffic), and then says so, naming the topic; with messages, it shows the rows
    chromium.find_element(By.ID, "preview-button").click()
    _wait(
        chromium,
        lambda d: d.find_element(By.ID, "preview-said").text not in ("", "Reading the topic's latest messages…"),
        timeout=120,
    )
    said = chromium.find_element(By.ID, "preview-said").text
    assert "messages read" in said or "GO_RIDE-booking-log does not exist" in said, said


SURGE = """SELECT city_id AS tag_city_id,
       S2Id(lat, long, 13) AS tag_s2id,
       COUNT(1) AS num_of_bookings,
       TUMBLE_END(rowtime, INTERVAL '60' SECOND) AS window_timestamp
FROM `data_stream`
WHERE status = 'COMPLETED'
GROUP BY TUMBLE(rowtime, INTERVAL '60' SECOND), city_id, S2Id(lat, long, 13)"""


def _type_query(driver, element_id: str, text: str) -> None:
    box = driver.find_element(By.ID, element_id)
    box.send_keys(Keys.CONTROL, "a")
    box.send_keys(Keys.DELETE)
    box.send_keys(text)


def _surge_windows(events) -> dict:
    """(city, S2 cell, window end) -> completed bookings, computed here with s2sphere."""
    from tests.reference import group, iso, s2id, window_end

    completed = [e for e in events if e["status"] == "COMPLETED"]
    return group(
        completed,
        key=lambda e: (str(e["city_id"]), s2id(e["lat"], e["long"], 13), iso(window_end(e["event_timestamp"], 60))),
        agg=len,
    )


def _influx_surge(lab_env, measurement: str) -> dict:

    series = team_influx(
        Path(lab_env["DAGGER_LAB_DIR"]),
        int(lab_env["DAGGER_LAB_PORT_BASE"]),
        "allocations",
        f'SELECT "num_of_bookings", "tag_city_id", "tag_s2id" FROM "{measurement}"',
        epoch="s",
    )
    return {
        (city, cell, dt.datetime.fromtimestamp(t, tz=dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")): n
        for s in series
        for t, n, city, cell in s["values"]
    }


def _shot(driver, name: str, at: str | None = None) -> None:
    """With DAGGER_SCREENSHOTS=<dir>, the page as the analyst sees it (scrolled to the element `at`),
    for the README (docs/images/portal)."""
    folder = os.environ.get("DAGGER_SCREENSHOTS")
    if folder:
        if at:
            driver.execute_script("document.getElementById(arguments[0]).scrollIntoView()", at)
        Path(folder).mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(Path(folder) / f"{name}.png"))


def test_an_analyst_makes_the_surge_dagger_in_three_steps_sees_its_first_window_on_a_map_edits_and_stops_it(
    lab_env, chromium
):
    """The seeds' surge query (completed bookings per S2 cell, level 13, per minute), all by clicks
    and keys in chromium; its windows compared with s2sphere's cells of the bookings sent."""

    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import Select

    from loadtest import traffic
    from protos import registry as protos

    lab, base = Path(lab_env["DAGGER_LAB_DIR"]), int(lab_env["DAGGER_LAB_PORT_BASE"])
    servers = ",".join(f"127.0.0.1:{base + 100 * n + 92}" for n in (1, 2, 3))
    run = uuid.uuid4().hex[:6]
    topic, name, measurement = f"booking-events-surge-{run}", f"surge-{run}", f"surge_{run}"
    admin = KafkaAdminClient(bootstrap_servers=servers, **access.kafka_python("admin", lab=lab))
    admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=3)])
    admin.close()
    message = protos.load().message_class(traffic.BOOKING)

    def send(events):
        producer = KafkaProducer(bootstrap_servers=servers, acks="all", **access.kafka_python("admin", lab=lab))
        for i, value in enumerate(traffic.encode(events, message)):
            producer.send(topic, value=value, partition=i % 2)
        producer.flush()
        producer.close()

    before = traffic.bookings(150, minutes=2, seed=91)
    send(before)
    portal = _sign_in(chromium, lab_env, "allocations")

    # step 1: the team's booking-events-* topics, this one by its name's end
    chromium.get(portal + "/daggers/new")
    chromium.find_element(By.CSS_SELECTOR, "input[value='mainstream/booking-events-*']").click()
    _wait(chromium, ec.visibility_of_element_located((By.ID, "topic_suffix"))).send_keys(
        topic.removeprefix("booking-events-")
    )
    _shot(chromium, "step-1-input")
    # step 2: the query, checked as it is typed
    chromium.find_element(By.ID, "name").send_keys(name)
    _type_query(chromium, "query", SURGE)
    # step 3: the sink, the team's InfluxDB
    Select(chromium.find_element(By.ID, "sink_type")).select_by_visible_text("influx")
    chromium.find_element(By.ID, "sink_name").send_keys(measurement)
    _wait(chromium, lambda d: d.find_element(By.ID, "verdict").text.startswith("Valid"), timeout=240)
    assert "tag_s2id string" in chromium.find_element(By.ID, "columns").text
    # nothing to warn of: the portal pins the descriptor set the topic's fields were read from
    assert chromium.find_elements(By.CSS_SELECTOR, "#problems li") == []
    _shot(chromium, "step-2-query", at="step2")
    chromium.find_element(By.ID, "preview-button").click()
    _wait(
        chromium,
        lambda d: (
            "messages read" in d.find_element(By.ID, "preview-said").text
            or "error" in d.find_element(By.ID, "preview-said").get_attribute("class")
        ),
        timeout=180,
    )
    said = chromium.find_element(By.ID, "preview-said").text
    want_before = _surge_windows(before)
    assert said.startswith("150 messages read, 0 set aside, ") and f" {len(want_before)} rows" in said, said
    _wait(chromium, lambda d: not d.find_element(By.ID, "verdict").text.startswith("Checking"), timeout=120)
    head = [th.text for th in chromium.find_elements(By.CSS_SELECTOR, "#preview thead th")]
    assert head == ["tag_city_id", "tag_s2id", "num_of_bookings", "window_timestamp"]  # the query's order
    _shot(chromium, "step-3-preview", at="step3")

    # deploy: on to the dagger's page, which follows it to its first window
    Select(chromium.find_element(By.ID, "cluster")).select_by_visible_text("blue")
    chromium.find_element(By.ID, "deploy-button").click()
    _wait(chromium, ec.url_to_be(f"{portal}/daggers/{name}"), timeout=300)
    registry = Registry((lab / "secrets" / "registry.url").read_text().strip())
    try:
        dagger = registry.get(name)
        assert dagger.team == "allocations" and dagger.cluster == "blue"
        assert registry.versions(name)[0].deployed_by == f"{access.analyst('allocations')} (portal)"
        deadline = time.monotonic() + 300
        while launches.last_committed_batch(Path(dagger.checkpoint)) < 0 and time.monotonic() < deadline:
            time.sleep(2)
        assert launches.last_committed_batch(Path(dagger.checkpoint)) >= 0, "no batch committed in 300 s"
        # windows of the last hour: the map looks for the latest window within cells.LOOK_BACK of now
        start = dt.datetime.now(dt.timezone.utc).replace(second=0, microsecond=0) - dt.timedelta(hours=1)
        after = [
            {**e, "event_timestamp": e["event_timestamp"] - traffic.START + start}
            for e in traffic.bookings(300, minutes=2, seed=92)
        ]
        closer = {
            **after[-1],
            "order_number": "closer",
            "status": "CREATED",
            "event_timestamp": start + dt.timedelta(minutes=5),
        }
        send(after + [closer])
        want = _surge_windows(after)
        _wait(chromium, lambda d: not d.find_element(By.ID, "first-window").get_attribute("hidden"), timeout=300)
        deadline = time.monotonic() + 120
        while _influx_surge(lab_env, measurement) != want and time.monotonic() < deadline:
            time.sleep(3)
        assert _influx_surge(lab_env, measurement) == want

        chromium.get(portal + "/daggers")
        _shot(chromium, "daggers")
        # the map: the latest window's cells, each drawn, every asset from the portal itself
        chromium.get(f"{portal}/daggers/{name}")
        last = max(w for _, _, w in want)
        cells = {cell for _, cell, w in want if w == last}
        expected = len({(c, cell) for c, cell, w in want if w == last})
        # the page may first be drawn from the portal's cached answer (CELLS_CACHE_S) read before the
        # window was written; the map redraws every 15 s, so the window must appear within a few redraws
        deadline = time.monotonic() + 60
        while chromium.find_element(By.ID, "map").get_attribute("data-drawn") != str(expected):
            if time.monotonic() > deadline:
                break
            time.sleep(1)
        drawn = chromium.find_element(By.ID, "map").get_attribute("data-drawn")
        assert drawn == str(expected), chromium.find_element(By.ID, "map-said").text
        assert len(chromium.find_elements(By.CSS_SELECTOR, "#map path.leaflet-interactive")) == int(drawn)
        assert f"by tag_s2id, the window at {last[:-1]}" in chromium.find_element(By.ID, "map-said").text
        assert len(cells) > 1
        resources = chromium.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
        assert resources and all(r.startswith(portal + "/") for r in resources), resources
        _shot(chromium, "dagger-map", at="map-heading")

        # a change without the session's CSRF token, from the page itself: refused, nothing stopped
        status = chromium.execute_async_script(
            "const done = arguments[arguments.length - 1];"
            "fetch(arguments[0], {method: 'POST', credentials: 'same-origin'})"
            ".then(r => done(r.status), e => done(String(e)))",
            f"{portal}/daggers/{name}/stop",
        )
        assert status == 400 and registry.get(name).running

        # edit: the next version, through the same checks
        chromium.find_element(By.LINK_TEXT, "edit the query").click()
        _wait(chromium, ec.presence_of_element_located((By.ID, "save-button")))
        _type_query(
            chromium, "query", SURGE.replace("status = 'COMPLETED'", "status IN ('COMPLETED', 'CUSTOMER_CANCELLED')")
        )
        _wait(chromium, lambda d: d.find_element(By.ID, "verdict").text.startswith("Valid"), timeout=120)
        chromium.find_element(By.ID, "save-button").click()
        _wait(chromium, ec.url_to_be(f"{portal}/daggers/{name}"), timeout=300)
        assert len(registry.versions(name)) == 2 and "version 2" in chromium.find_element(By.TAG_NAME, "body").text
        assert "CUSTOMER_CANCELLED" in registry.versions(name)[-1].spec

        # another team: nothing of it, by page or by request
        _sign_in(chromium, lab_env, "api-health")
        for path in (f"/daggers/{name}", f"/daggers/{name}/edit", f"/api/daggers/{name}", f"/api/daggers/{name}/cells"):
            chromium.get(portal + path)
            assert name not in chromium.page_source and measurement not in chromium.page_source, path
        chromium.get(portal + "/daggers")
        assert name not in chromium.page_source

        # back as the analyst: stop it
        _sign_in(chromium, lab_env, "allocations")
        chromium.get(f"{portal}/daggers/{name}")
        chromium.find_element(By.CSS_SELECTOR, "form button.danger").click()
        _wait(chromium, lambda d: registry.get(name).status == "STOPPED", timeout=180)
        assert registry.history(name)[-1].actor == f"{access.analyst('allocations')} (portal)"
    finally:
        if registry.get(name) is not None and registry.get(name).running:
            from dagger_runtime.lifecycle import operations

            operations.stop(registry, name, actor="test cleanup", clusters_dir=str(lab / "clusters"))
        registry.close()
