"""The portal's walls, without a provider: a signed-in user (its session as the sign-in leaves it)
sees its teams' daggers only, by page and by API; another team's dagger is answered exactly as one
that does not exist; changes need the session's CSRF token and the portal's own origin; what a
user wrote is shown as text; cookies and headers are the safe ones. The sign-in itself, through
the lab's Keycloak, is tests/test_portal_sign_in.py."""

from __future__ import annotations

import json
import os
import re
import time

import pytest

from dagger_runtime.errors import DaggerError
from dagger_runtime.lifecycle.registry import Registry
from portal import access
from portal.app import SESSION_HOURS, create_app, safe_next
from portal.config import PortalConfig

OPS = "dagger-platform-operators@daggers.dev"
GROUPS = {"dagger-allocations-owners@daggers.dev": "allocations", "dagger-api-health-owners@daggers.dev": "api-health"}
SCRIPT = "<script>alert('x')</script>"


def _secret_file(tmp_path, name, value):
    path = tmp_path / name
    path.write_text(value)
    os.chmod(path, 0o600)
    return str(path)


@pytest.fixture
def registry(tmp_path):
    reg = Registry(f"sqlite:///{tmp_path / 'registry.db'}")
    for name, team in (("surge-demand", "allocations"), ("api-errors", "api-health")):
        spec = f"name: {name}\nteam: {team}\nsql: SELECT 1 -- {SCRIPT}\n"
        reg.record_version(
            name=name,
            team=team,
            cluster="blue",
            spec=spec,
            spec_format=".yaml",
            spec_digest="d" * 64,
            state_key="k",
            checkpoint=f"/c/{name}/v1",
            start="latest",
            actor="someone",
            submission_id=None,
            metrics_port=None,
            action="deploy",
        )
    yield reg
    reg.close()


def portal_app(tmp_path, registry, clusters_dir=None, **settings):
    """The portal over `registry`, signed in by hand (_signed_in), its clusters folder empty unless given."""
    if clusters_dir is None:
        clusters_dir = tmp_path / "no-clusters"
        clusters_dir.mkdir(exist_ok=True)
    config = PortalConfig.load(
        url="http://127.0.0.1:23080",
        issuer="http://127.0.0.1:23180/realms/daggers",
        client_id="dagger-portal",
        client_secret_file=_secret_file(tmp_path, "s", "x" * 40),
        session_key_file=_secret_file(tmp_path, "k", "y" * 48),
        registry_url=registry.where,
        clusters_dir=str(clusters_dir),
        **settings,
    )
    app = create_app(config, registry=registry)
    app.config["TESTING"] = True
    return app


@pytest.fixture
def app(tmp_path, registry):
    return portal_app(tmp_path, registry)


def _signed_in(app, *, teams=(), operator=False, user="ana", at=None):
    """A client whose session is what the sign-in leaves: the token's claims that count, and when."""
    groups = [g for g, t in GROUPS.items() if t in teams] + ([OPS] if operator else [])
    client = app.test_client()
    with client.session_transaction() as s:
        s["signed_in"] = {
            "at": time.time() if at is None else at,
            "claims": {"sub": "sub-" + user, "preferred_username": user, "groups": groups},
        }
    return client


def test_without_a_session_pages_send_to_the_sign_in_and_the_api_says_401(app):
    client = app.test_client()
    page = client.get("/daggers")
    assert page.status_code == 302 and page.headers["Location"].startswith("/auth/login?next=/daggers")
    api = client.get("/api/daggers")
    assert api.status_code == 401 and api.json == {"error": "sign in first"}
    assert client.get("/api/daggers/surge-demand").status_code == 401
    home = client.get("/")
    assert home.status_code == 200 and b"Sign in" in home.data


def test_a_team_sees_its_daggers_only_by_page_and_by_api(app):
    client = _signed_in(app, teams=["allocations"])
    listed = client.get("/api/daggers").json
    assert [d["dagger"] for d in listed["daggers"]] == ["surge-demand"]
    page = client.get("/daggers").get_data(as_text=True)
    assert "surge-demand" in page and "api-errors" not in page and "api-health" not in page
    assert client.get("/api/daggers/surge-demand").json["team"] == "allocations"
    assert client.get("/daggers/surge-demand").status_code == 200


def test_another_teams_dagger_is_not_found_exactly_like_a_missing_one(app):
    client = _signed_in(app, teams=["allocations"])
    for prefix in ("/api/daggers/", "/daggers/"):
        other, missing = client.get(prefix + "api-errors"), client.get(prefix + "no-such-dagger")
        assert other.status_code == missing.status_code == 404
        assert other.data == missing.data
        assert b"api-errors" not in other.data and b"api-health" not in other.data


def test_an_operator_sees_every_team(app):
    client = _signed_in(app, operator=True, user="operator")
    assert sorted(d["dagger"] for d in client.get("/api/daggers").json["daggers"]) == ["api-errors", "surge-demand"]
    assert client.get("/api/daggers/api-errors").status_code == 200


def test_what_a_user_wrote_is_shown_as_text(app):
    client = _signed_in(app, teams=["allocations"])
    page = client.get("/daggers/surge-demand").get_data(as_text=True)
    assert SCRIPT not in page and "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in page
    api = client.get("/api/daggers/surge-demand")
    assert api.headers["Content-Type"] == "application/json" and SCRIPT in api.json["versions"][0]["spec"]


def test_a_change_needs_the_sessions_csrf_token_and_the_portals_origin(app):
    client = _signed_in(app, teams=["allocations"])
    refused = client.post("/auth/logout")
    assert refused.status_code == 400 and b"CSRF" in refused.data
    page = client.get("/daggers").get_data(as_text=True)
    token = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
    elsewhere = client.post("/auth/logout", data={"csrf_token": token}, headers={"Origin": "http://evil.example"})
    assert elsewhere.status_code == 403
    # another session's token is no good either
    other = _signed_in(app, teams=["api-health"], user="bob")
    assert other.post("/auth/logout", data={"csrf_token": token}).status_code == 400
    with client.session_transaction() as s:
        assert s.get("signed_in")  # still signed in after the refusals


def test_the_session_cookie_and_the_headers(app):
    client = _signed_in(app, teams=["allocations"])
    response = client.get("/daggers")  # the page's CSRF token is kept in the session: it is sent again
    cookie = response.headers["Set-Cookie"]
    assert cookie.startswith("__Host-dagger-portal=")
    for flag in ("Secure", "HttpOnly", "SameSite=Lax", "Path=/"):
        assert flag in cookie, cookie
    assert "Domain=" not in cookie
    assert app.config["SESSION_COOKIE_NAME"] == "__Host-dagger-portal"
    assert app.config["SESSION_COOKIE_SECURE"] and app.config["SESSION_COOKIE_HTTPONLY"]
    csp = response.headers["Content-Security-Policy"]
    assert "default-src 'self'" in csp and "frame-ancestors 'none'" in csp and "script-src" not in csp
    # the sign-out's form goes on to the provider's end-session page, and nowhere else
    assert "form-action 'self' http://127.0.0.1:23180;" in csp
    assert response.headers["X-Content-Type-Options"] == "nosniff" and response.headers["X-Frame-Options"] == "DENY"


@pytest.mark.parametrize(
    "target, expected",
    [
        ("/daggers", "/daggers"),
        ("/daggers/x?tab=1", "/daggers/x?tab=1"),
        ("//evil.example/", "/"),
        ("/\\evil.example", "/"),
        ("https://evil.example", "/"),
        ("evil", "/"),
        ("/\tevil", "/"),
        ("/%0d%0aSet-Cookie:x", "/%0d%0aSet-Cookie:x"),
        ("", "/"),
    ],
)
def test_after_the_sign_in_only_a_path_of_the_portal(target, expected):
    assert safe_next(target) == expected


def test_a_viewer_is_the_teams_whose_owners_group_the_token_names():
    claims = {
        "sub": "1",
        "preferred_username": "ana",
        "groups": ["dagger-allocations-owners@daggers.dev", "unrelated@daggers.dev"],
    }
    v = access.viewer(claims, GROUPS, OPS)
    assert (v.teams, v.operator) == (frozenset({"allocations"}), False)
    assert v.sees("allocations") and not v.sees("api-health") and not v.sees(None)
    # another spelling of a group is not that group
    with pytest.raises(access.NotAMember):
        access.viewer({**claims, "groups": ["Dagger-Allocations-Owners@daggers.dev"]}, GROUPS, OPS)
    with pytest.raises(access.NotAMember):
        access.viewer({**claims, "groups": "dagger-allocations-owners@daggers.dev"}, GROUPS, OPS)
    with pytest.raises(access.NotAMember):
        access.viewer({"groups": ["dagger-allocations-owners@daggers.dev"]}, GROUPS, OPS)
    op = access.viewer({**claims, "groups": [OPS]}, GROUPS, OPS)
    assert op.operator and op.sees("api-health")


def test_the_config_refuses_plain_http_off_loopback_and_readable_secrets(tmp_path):
    good = {
        "url": "http://127.0.0.1:1",
        "issuer": "https://sso.daggers.dev/realms/daggers",
        "client_id": "p",
        "client_secret_file": _secret_file(tmp_path, "s", "x" * 40),
        "session_key_file": _secret_file(tmp_path, "k", "y" * 48),
        "registry_url": "sqlite://",
    }
    PortalConfig.load(**good)
    with pytest.raises(DaggerError, match="http only on loopback"):
        PortalConfig.load(**{**good, "url": "http://portal.daggers.dev"})
    loose = tmp_path / "loose"
    loose.write_text("x" * 40)
    os.chmod(loose, 0o644)
    with pytest.raises(DaggerError, match="may be read by others"):
        PortalConfig.load(**{**good, "client_secret_file": str(loose)})
    with pytest.raises(DaggerError, match="shorter than 24"):
        PortalConfig.load(**{**good, "client_secret_file": _secret_file(tmp_path, "short", "abc")})
    with pytest.raises(DaggerError, match="not an http"):
        PortalConfig.load(**{**good, "issuer": "https://user:pw@sso.daggers.dev/realms/daggers"})
    # where new daggers go: each one address of its kind, nothing that reaches a command or a file
    made = PortalConfig.load(
        **good,
        kafka="k1.daggers.dev:9092,127.0.0.1:19192",
        postgres="127.0.0.1:5432",
        influx_url="https://influx.daggers.dev",
    )
    assert (made.kafka, made.postgres, made.influx_url) == (
        "k1.daggers.dev:9092,127.0.0.1:19192",
        ("127.0.0.1", 5432),
        "https://influx.daggers.dev",
    )
    for kafka in ("k1:9092;k2:9092", "k1", "k1:9092,", " k1:9092", "k1:9092\nk2:1", "-k:1"):
        with pytest.raises(DaggerError, match="bootstrap servers"):
            PortalConfig.load(**good, kafka=kafka)
    for pg in ("127.0.0.1", "127.0.0.1:0", "127.0.0.1:70000", "h ost:5432", "127.0.0.1:5432/db"):
        with pytest.raises(DaggerError, match="PostgreSQL"):
            PortalConfig.load(**good, postgres=pg)
    with pytest.raises(DaggerError, match="http only on loopback"):
        PortalConfig.load(**good, influx_url="http://influx.daggers.dev")


def _token(client, path="/daggers"):
    return re.search(r'name="csrf_token" value="([^"]+)"', client.get(path).get_data(as_text=True)).group(1)


def test_stopping_another_teams_dagger_is_not_found_and_changes_nothing(app, registry):
    client = _signed_in(app, teams=["allocations"])
    token = _token(client)
    before = registry.get("api-errors").status
    assert client.post("/daggers/api-errors/stop", data={"csrf_token": token}).status_code == 404
    assert registry.get("api-errors").status == before and len(registry.history("api-errors")) == 1
    # its own: the token is needed; then the operation runs (here it finds no cluster and says so)
    assert client.post("/daggers/surge-demand/stop").status_code == 400
    done = client.post("/daggers/surge-demand/stop", data={"csrf_token": token})
    assert done.status_code == 303 and done.headers["Location"] == "/daggers/surge-demand"
    page = client.get("/daggers/surge-demand").get_data(as_text=True)
    assert 'class="flash error"' in page and "did not go through" in page


def test_a_versions_diff_is_shown_as_text_and_only_to_its_team(app, registry):
    spec = registry.version("surge-demand").spec
    registry.record_version(
        name="surge-demand",
        team="allocations",
        cluster="blue",
        spec=spec.replace("SELECT 1", "SELECT 2 /* <b>bold</b> */"),
        spec_format=".yaml",
        spec_digest="e" * 64,
        state_key="k",
        checkpoint="/c/surge-demand/v2",
        start="latest",
        actor="ana",
        submission_id=None,
        metrics_port=None,
        action="edit",
    )
    client = _signed_in(app, teams=["allocations"])
    page = client.get("/daggers/surge-demand/diff").get_data(as_text=True)
    assert "version 1 → 2" in page
    assert '<span class="add">+sql: SELECT 2 /* &lt;b&gt;bold&lt;/b&gt; */' in page
    assert '<span class="del">-sql: SELECT 1' in page and "<b>bold</b>" not in page
    assert client.get("/daggers/surge-demand/diff?from=1&to=7").status_code == 404
    other = _signed_in(app, teams=["api-health"], user="bob")
    assert other.get("/daggers/surge-demand/diff").status_code == 404
    assert other.get("/daggers/surge-demand/logs").status_code == 404


def test_a_dagger_without_a_driver_says_so_on_its_log_page(app):
    client = _signed_in(app, teams=["allocations"])
    page = client.get("/daggers/surge-demand/logs")
    assert page.status_code == 200 and "It has no driver." in page.get_data(as_text=True)


def test_a_session_ends_its_hours_after_the_sign_in_however_busy(app):
    fresh = _signed_in(app, teams=["allocations"], at=time.time() - SESSION_HOURS * 3600 + 60)
    assert fresh.get("/api/me").status_code == 200
    stale = _signed_in(app, teams=["allocations"], at=time.time() - SESSION_HOURS * 3600 - 1)
    assert stale.get("/api/me").status_code == 401
    with stale.session_transaction() as s:
        assert "signed_in" not in s  # cleared, not kept alive by the request


def test_the_teams_are_the_groups_against_todays_grants(app):
    """A session keeps the token's groups, not teams: a group no grant names any longer gives nothing."""
    client = app.test_client()
    with client.session_transaction() as s:
        s["signed_in"] = {
            "at": time.time(),
            "claims": {"sub": "1", "preferred_username": "eve", "groups": ["dagger-old-team-owners@daggers.dev"]},
        }
    assert client.get("/api/daggers").status_code == 401


def test_a_failed_operation_tells_a_team_a_sentence_and_an_operator_the_cause(app, registry):
    client = _signed_in(app, teams=["allocations"])
    client.post("/daggers/surge-demand/stop", data={"csrf_token": _token(client)})
    page = client.get("/daggers/surge-demand").get_data(as_text=True)
    assert "The stop of surge-demand did not go through; the platform&#39;s operators can see why" in page
    assert "no-clusters" not in page
    operator = _signed_in(app, operator=True, user="operator")
    operator.post("/daggers/surge-demand/stop", data={"csrf_token": _token(operator)})
    assert "no-clusters" in operator.get("/daggers/surge-demand").get_data(as_text=True)


def test_another_teams_dagger_cannot_be_edited_by_page_or_request(app):
    client = _signed_in(app, teams=["allocations"])
    token = _token(client)
    for path in ("/daggers/api-errors/edit", "/daggers/no-such-dagger/edit"):
        assert client.get(path).status_code == 404
    for path in ("/api/daggers/api-errors/validate", "/api/daggers/api-errors/edit"):
        refused = client.post(path, json={"query": "SELECT 1"}, headers={"X-CSRFToken": token})
        assert refused.status_code == 404 and b"api-health" not in refused.data
    # without the session's token, even its own
    assert client.post("/api/daggers/surge-demand/edit", json={"query": "SELECT 1"}).status_code == 400
    # its own: the query shown as text in the editor
    page = client.get("/daggers/surge-demand/edit").get_data(as_text=True)
    assert SCRIPT not in page and "SELECT 1 -- &lt;script&gt;" in page


def test_only_a_platform_operator_may_fail_a_dagger_over_and_only_to_a_cluster_offered(tmp_path, registry):
    clusters = tmp_path / "clusters"
    (clusters / "kafka").mkdir(parents=True)
    for name, port in (("blue", 1), ("green", 2)):
        (clusters / f"{name}.allocations.json").write_text(
            json.dumps(
                {
                    "name": name,
                    "team": "allocations",
                    "master": f"spark://127.0.0.1:{port}",
                    "web_ui": f"http://127.0.0.1:{port}",
                    "checkpoint_root": str(tmp_path / "cp"),
                    "spark_home": "/nowhere",
                    "python": "/nowhere/python",
                    "jvm_dir": "/nowhere",
                    "spec_dir": str(tmp_path / "specs"),
                    "metrics_ports": [port * 10000, port * 10000 + 9],
                }
            )
        )
    for name, extra in (("primary", {}), ("mirror", {"mirror_of": {"cluster": "primary", "topic_prefix": "primary."}})):
        (clusters / "kafka" / f"{name}.json").write_text(
            json.dumps({"name": name, "bootstrap_servers": "127.0.0.1:9", **extra})
        )
    app = portal_app(tmp_path, registry, clusters)
    before = (registry.get("surge-demand"), len(registry.history("surge-demand")))

    analyst = _signed_in(app, teams=["allocations"])
    page = analyst.get("/daggers/surge-demand").get_data(as_text=True)
    assert 'id="failover"' not in page
    refused = analyst.post("/daggers/surge-demand/failover", data={"csrf_token": _token(analyst), "to": "spark/green"})
    assert refused.status_code == 403
    assert (registry.get("surge-demand"), len(registry.history("surge-demand"))) == before

    operator = _signed_in(app, operator=True, user="olga")
    page = operator.get("/daggers/surge-demand").get_data(as_text=True)
    offered = re.findall(r'<option value="([^"]+)">', page[page.index('id="failover"') :])
    assert offered == ["spark/green", "kafka/mirror", "kafka/primary"]  # not blue, where it runs
    token = _token(operator)
    for target in ("spark/blue", "spark/nowhere", "kafka/../primary", "green", ""):
        moved = operator.post("/daggers/surge-demand/failover", data={"csrf_token": token, "to": target})
        assert moved.status_code == 303
        assert "choose one of the clusters offered" in operator.get("/daggers/surge-demand").get_data(as_text=True)
    assert (registry.get("surge-demand"), len(registry.history("surge-demand"))) == before
    # a target offered: the operation itself runs (here no Spark master answers, which it says, with the cause)
    assert operator.post("/daggers/surge-demand/failover", data={"to": "spark/green"}).status_code == 400
    operator.post("/daggers/surge-demand/failover", data={"csrf_token": token, "to": "spark/green"})
    said = operator.get("/daggers/surge-demand").get_data(as_text=True)
    assert "the failover of surge-demand to spark/green did not go through: " in said
    assert registry.get("surge-demand").cluster == "blue"


def test_the_daggers_list_without_live_numbers_still_lists_the_teams_daggers_and_says_why(tmp_path, registry):
    clusters = tmp_path / "broken-clusters"
    clusters.mkdir()
    (clusters / "blue.json").write_text("{not json")
    app = portal_app(tmp_path, registry, clusters)
    client = _signed_in(app, teams=["allocations"])
    page = client.get("/daggers")
    text = page.get_data(as_text=True)
    assert page.status_code == 200 and 'data-dagger="surge-demand"' in text and "api-errors" not in text
    assert "live numbers cannot be read now" in text and "blue.json" not in text  # the cause is the operators'
    answer = client.get("/api/daggers")
    assert answer.status_code == 503 and "api-errors" not in answer.get_data(as_text=True)
