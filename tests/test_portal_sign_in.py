"""The portal on the lab (playbooks/roles/portal, base + 4080), signed into through the lab's
Keycloak as a browser does: each team's analyst lands on its daggers and sees its team's only;
another team's dagger is not found, by page and by hand-made request; signing out needs the
session's CSRF token and ends the provider's session too."""

from __future__ import annotations

import re
import urllib.parse
import uuid
from pathlib import Path

import pytest
import requests

from dagger_runtime.lifecycle.registry import Registry
from lab import access
from lab.oidc_browser import browser, submit_form, submit_login

pytestmark = [pytest.mark.e2e]


class Portal:
    def __init__(self, env: dict):
        self.lab = Path(env["DAGGER_LAB_DIR"])
        base = int(env["DAGGER_LAB_PORT_BASE"])
        self.url = f"http://127.0.0.1:{base + 4080}"
        self.keycloak = f"http://127.0.0.1:{base + 4180}"

    def sign_in(self, user: str, next_path: str = "/daggers") -> requests.Session:
        s = browser()
        start = s.get(f"{self.url}/auth/login", params={"next": next_path}, allow_redirects=False, timeout=30)
        assert start.status_code == 302 and start.headers["Location"].startswith(self.keycloak), start.headers
        page = s.get(start.headers["Location"], timeout=30)
        back = submit_login(s, page, user, access.sign_in_password(user, self.lab))
        assert back.status_code == 302 and back.headers["Location"].startswith(f"{self.url}/auth/callback?")
        landed = s.get(back.headers["Location"], allow_redirects=False, timeout=30)
        assert landed.status_code == 302 and landed.headers["Location"] == next_path, (
            landed.status_code,
            landed.text[:300],
        )
        return s


@pytest.fixture(scope="module")
def portal(lab_env) -> Portal:
    return Portal(lab_env)


@pytest.fixture(scope="module")
def other_teams_dagger(lab_env):
    """A stopped dagger of api-health in the lab's registry, whose name and query no one else may see."""
    registry = Registry((Path(lab_env["DAGGER_LAB_DIR"]) / "secrets" / "registry.url").read_text().strip())
    name = f"portal-probe-{uuid.uuid4().hex[:6]}"
    secret_sql = f"SELECT 'only-api-health-{uuid.uuid4().hex[:6]}'"
    registry.record_version(
        name=name,
        team="api-health",
        cluster="blue",
        spec=f"name: {name}\nsql: {secret_sql}\n",
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
    yield name, secret_sql
    registry.close()


def test_an_analyst_signs_in_and_sees_their_teams_daggers_only(portal, other_teams_dagger):
    name, secret_sql = other_teams_dagger
    s = portal.sign_in(access.analyst("allocations"))
    me = s.get(f"{portal.url}/api/me", timeout=30).json()
    assert me == {"user": access.analyst("allocations"), "teams": ["allocations"], "operator": False}
    daggers = s.get(f"{portal.url}/api/daggers", timeout=60).json()
    assert {d["team"] for d in daggers["daggers"]} <= {"allocations"}
    assert {c["team"] for c in daggers["clusters"]} == {"allocations"}
    page = s.get(f"{portal.url}/daggers", timeout=60)
    assert page.status_code == 200 and name not in page.text and "api-health" not in page.text
    # by hand-made requests: another team's dagger is not found, as one that does not exist
    for path in (f"/api/daggers/{name}", f"/daggers/{name}"):
        other, missing = s.get(portal.url + path, timeout=30), s.get(portal.url + path + "-none", timeout=30)
        assert other.status_code == missing.status_code == 404
        assert name not in other.text and secret_sql not in other.text
    # its own team's analyst reads it
    theirs = portal.sign_in(access.analyst("api-health"), next_path=f"/daggers/{name}")
    assert secret_sql in theirs.get(f"{portal.url}/api/daggers/{name}", timeout=30).text


def test_the_operator_sees_every_team(portal, other_teams_dagger):
    name, _ = other_teams_dagger
    s = portal.sign_in(access.OPERATOR)
    assert s.get(f"{portal.url}/api/me", timeout=30).json()["operator"] is True
    assert s.get(f"{portal.url}/api/daggers/{name}", timeout=30).status_code == 200


def test_signing_out_needs_the_csrf_token_and_ends_the_providers_session_too(portal):
    s = portal.sign_in(access.analyst("allocations"))
    assert s.post(f"{portal.url}/auth/logout", timeout=30, allow_redirects=False).status_code == 400
    assert s.get(f"{portal.url}/api/me", timeout=30).status_code == 200  # still signed in
    token = re.search(r'name="csrf_token" value="([^"]+)"', s.get(f"{portal.url}/daggers", timeout=60).text).group(1)
    out = s.post(f"{portal.url}/auth/logout", data={"csrf_token": token}, timeout=30, allow_redirects=False)
    assert out.status_code == 303
    end = urllib.parse.urlsplit(out.headers["Location"])
    assert (
        f"{end.scheme}://{end.netloc}{end.path}"
        == f"{portal.keycloak}/realms/{access.REALM}/protocol/openid-connect/logout"
    )
    assert "id_token_hint" not in end.query  # no token in a URL (history, the provider's log)
    assert s.get(f"{portal.url}/api/me", timeout=30).status_code == 401
    # the provider asks to confirm, as the user would: its session ends too
    confirm = s.get(out.headers["Location"], timeout=30)
    submit_form(s, confirm)
    again = s.get(f"{portal.url}/auth/login", allow_redirects=False, timeout=30)
    page = s.get(again.headers["Location"], timeout=30, allow_redirects=False)
    assert page.status_code == 200 and 'id="kc-form-login"' in page.text  # asked for the password again
