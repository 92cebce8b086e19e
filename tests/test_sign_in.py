"""The platform's sign-in on the lab: Keycloak (playbooks/roles/keycloak), realm `daggers`, signed
into as a browser does (the login page's form, the authorization code flow with PKCE) by each
team's analyst and the operator. The ID token, checked against the realm's published keys, names
the user's groups: the team's owners' group from its grant, nothing else. Walls: a wrong password,
a code without its PKCE verifier, a redirect elsewhere, the password grant."""

from __future__ import annotations

import base64
import hashlib
import secrets
import stat
import urllib.parse
from pathlib import Path

import pytest
import requests
import yaml
from joserfc import jwt
from joserfc.jwk import KeySet

from lab import access
from lab.oidc_browser import browser, submit_login

pytestmark = [pytest.mark.e2e]

REPO = Path(__file__).resolve().parent.parent
OPERATORS = "dagger-platform-operators@daggers.dev"
TEAMS = ("allocations", "api-health")


def _grant_group(team: str) -> str:
    """The team's owners' group, read from its grant file here (not through the code under test)."""
    return yaml.safe_load((REPO / "infra" / "grants" / f"{team}.yaml").read_text())["rbac_group"]


class Realm:
    def __init__(self, env: dict):
        self.lab = Path(env["DAGGER_LAB_DIR"])
        base = int(env["DAGGER_LAB_PORT_BASE"])
        self.issuer = f"http://127.0.0.1:{base + 4180}/realms/{access.REALM}"
        self.redirect = f"http://127.0.0.1:{base + 4080}/auth/callback"
        self.secret = access.portal_client_secret(self.lab)

    def authorize(self, session: requests.Session, *, pkce: bool = True, redirect: str | None = None):
        """The login page's response to an authorization request; (response, state, nonce, verifier)."""
        state, nonce, verifier = secrets.token_urlsafe(16), secrets.token_urlsafe(16), secrets.token_urlsafe(48)
        params = {
            "client_id": access.PORTAL_CLIENT,
            "redirect_uri": redirect or self.redirect,
            "response_type": "code",
            "scope": "openid",
            "state": state,
            "nonce": nonce,
        }
        if pkce:
            challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
            params.update(code_challenge=challenge, code_challenge_method="S256")
        page = session.get(
            f"{self.issuer}/protocol/openid-connect/auth", params=params, timeout=30, allow_redirects=False
        )
        return page, state, nonce, verifier

    def log_in(self, session: requests.Session, page: requests.Response, user: str, password: str):
        return submit_login(session, page, user, password)

    def sign_in(self, user: str, password: str | None = None) -> dict:
        """The ID token's claims after signing in as `user` (checked: signature, issuer, audience, nonce)."""
        with browser() as s:
            page, state, nonce, verifier = self.authorize(s)
            back = self.log_in(s, page, user, password or access.sign_in_password(user, self.lab))
            assert back.status_code == 302, back.text[:500]
            where = urllib.parse.urlsplit(back.headers["Location"])
            assert f"{where.scheme}://{where.netloc}{where.path}" == self.redirect
            query = urllib.parse.parse_qs(where.query)
            assert query["state"] == [state]
            tokens = s.post(
                f"{self.issuer}/protocol/openid-connect/token",
                timeout=30,
                data={
                    "grant_type": "authorization_code",
                    "code": query["code"][0],
                    "redirect_uri": self.redirect,
                    "client_id": access.PORTAL_CLIENT,
                    "client_secret": self.secret,
                    "code_verifier": verifier,
                },
            )
            assert tokens.status_code == 200, tokens.text
            keys = KeySet.import_key_set(s.get(f"{self.issuer}/protocol/openid-connect/certs", timeout=30).json())
            token = jwt.decode(tokens.json()["id_token"], keys, algorithms=["RS256"])
            jwt.JWTClaimsRegistry(
                iss={"essential": True, "value": self.issuer},
                aud={"essential": True, "value": access.PORTAL_CLIENT},
                nonce={"essential": True, "value": nonce},
                exp={"essential": True},
            ).validate(token.claims)
            claims = token.claims
            return dict(claims)


@pytest.fixture(scope="module")
def realm(lab_env) -> Realm:
    return Realm(lab_env)


def test_each_teams_analyst_signs_in_and_the_token_names_its_teams_group_only(realm):
    for team in TEAMS:
        claims = realm.sign_in(access.analyst(team))
        assert claims["preferred_username"] == access.analyst(team)
        assert claims["groups"] == [_grant_group(team)]
    operator = realm.sign_in(access.OPERATOR)
    assert operator["groups"] == [OPERATORS]


def test_a_wrong_password_gets_the_login_page_again_and_no_code(realm):
    with browser() as s:
        page, *_ = realm.authorize(s)
        back = realm.log_in(
            s, page, access.analyst("allocations"), access.sign_in_password(access.analyst("api-health"), realm.lab)
        )
        assert back.status_code == 200 and "Location" not in back.headers
        assert "Invalid username or password" in back.text


def test_a_code_needs_its_pkce_verifier_and_the_portals_secret(realm):
    with browser() as s:
        no_pkce, *_ = realm.authorize(s, pkce=False)
        # Keycloak sends the browser back to the portal with the error, or refuses outright
        refused = no_pkce.status_code == 400 or "error=invalid_request" in no_pkce.headers.get("Location", "")
        assert refused, (no_pkce.status_code, no_pkce.headers.get("Location"))
        page, state, nonce, verifier = realm.authorize(s)
        back = realm.log_in(
            s, page, access.analyst("allocations"), access.sign_in_password(access.analyst("allocations"), realm.lab)
        )
        code = urllib.parse.parse_qs(urllib.parse.urlsplit(back.headers["Location"]).query)["code"][0]
        token_url = f"{realm.issuer}/protocol/openid-connect/token"
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": realm.redirect,
            "client_id": access.PORTAL_CLIENT,
            "client_secret": realm.secret,
            "code_verifier": verifier + "x",
        }
        assert s.post(token_url, data=form, timeout=30).status_code == 400
        # a code is used once: the right verifier cannot redeem it after a failed try either
        assert s.post(token_url, data={**form, "code_verifier": verifier}, timeout=30).status_code == 400


def test_no_redirect_but_the_portals_and_no_password_grant(realm):
    with browser() as s:
        elsewhere, *_ = realm.authorize(s, redirect="http://127.0.0.1:1/auth/callback")
        assert elsewhere.status_code == 400 and "Location" not in elsewhere.headers
        assert "Invalid parameter: redirect_uri" in elsewhere.text
        user = access.analyst("allocations")
        grant = s.post(
            f"{realm.issuer}/protocol/openid-connect/token",
            timeout=30,
            data={
                "grant_type": "password",
                "client_id": access.PORTAL_CLIENT,
                "client_secret": realm.secret,
                "username": user,
                "password": access.sign_in_password(user, realm.lab),
                "scope": "openid",
            },
        )
        assert grant.status_code in (400, 401) and grant.json()["error"] == "unauthorized_client"


def test_the_realm_file_and_the_secrets_are_the_labs_users_only(realm):
    files = [
        realm.lab / "keycloak" / "realm" / f"{access.REALM}.json",
        realm.lab / "secrets" / "keycloak" / f"{access.PORTAL_CLIENT}.secret",
        realm.lab / "secrets" / "keycloak" / "platform-admin.password",
        *(realm.lab / "secrets" / "keycloak" / "users").iterdir(),
    ]
    assert len(files) == 3 + len(TEAMS) + 1
    for f in files:
        assert stat.S_IMODE(f.stat().st_mode) == 0o600, f
    conf = next((realm.lab / "keycloak").glob("keycloak-*/conf/keycloak.conf"))
    assert stat.S_IMODE(conf.stat().st_mode) == 0o600


def test_no_one_can_make_an_administrator_from_the_welcome_page(realm):
    """While the master realm has no administrator, Keycloak's welcome page lets anyone on loopback
    create one; the role makes its own at once."""
    server = realm.issuer.rsplit("/realms/", 1)[0]
    with browser() as s:
        welcome = s.get(f"{server}/", timeout=30)
        assert "create an administrative user" not in welcome.text.lower()
        # and a hand-made post of its form makes no one
        s.post(
            f"{server}/",
            data={"username": "eve", "password": "eve-pw-1234", "passwordConfirmation": "eve-pw-1234"},
            timeout=30,
            allow_redirects=False,
        )
        login = s.post(
            f"{server}/realms/master/protocol/openid-connect/token",
            timeout=30,
            data={"grant_type": "password", "client_id": "admin-cli", "username": "eve", "password": "eve-pw-1234"},
        )
        assert login.status_code in (400, 401) and login.json()["error"] == "invalid_grant"
