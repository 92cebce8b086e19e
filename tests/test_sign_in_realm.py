"""The sign-in realm the keycloak role imports (playbooks/filter_plugins/sign_in.py): built from the
teams' grants, one confidential client (the portal) on the code flow only, and every field that
reaches Keycloak or a file refused unless it is of the expected shape."""

from __future__ import annotations

import base64
import re
from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from tests.filter_plugins import plugin

REPO = Path(__file__).resolve().parent.parent

_sign_in = plugin("sign_in")
keycloak_realm, operators_group, team_group = _sign_in.keycloak_realm, _sign_in.operators_group, _sign_in.team_group

OPS = "dagger-platform-operators@daggers.dev"
SECRET = "s" * 32


def _realm(**changes):
    groups = ["dagger-allocations-owners@daggers.dev", "dagger-api-health-owners@daggers.dev", OPS]
    users = [
        {"username": "allocations-analyst", "name": "Ana Lyst", "groups": [groups[0]]},
        {"username": "api-health-analyst", "groups": [groups[1]]},
        {"username": "operator", "groups": [OPS]},
    ]
    passwords = {u["username"]: f"pw-{u['username']}" for u in users}
    args = {
        "realm": "daggers",
        "groups": groups,
        "users": users,
        "passwords": passwords,
        "client": {"id": "dagger-portal", "secret": SECRET, "url": "http://127.0.0.1:23080"},
    }
    args.update(changes)
    return keycloak_realm(**args)


def test_a_teams_group_is_its_grants_owners_group():
    for grant in sorted((REPO / "infra" / "grants").glob("*.yaml")):
        assert team_group(grant.stem) == yaml.safe_load(grant.read_text())["rbac_group"]
    assert operators_group() == OPS
    with pytest.raises(AnsibleFilterError, match="team 'nobody' has no grant"):
        team_group("nobody")


def test_the_realm_has_the_groups_users_and_a_code_flow_client_that_puts_groups_in_the_token():
    realm = _realm()
    assert realm["realm"] == "daggers" and realm["sslRequired"] == "external"
    assert not realm["registrationAllowed"] and realm["bruteForceProtected"]
    assert [g["name"] for g in realm["groups"]] == [
        "dagger-allocations-owners@daggers.dev",
        "dagger-api-health-owners@daggers.dev",
        OPS,
    ]
    ana = realm["users"][0]
    assert (ana["username"], ana["firstName"], ana["lastName"]) == ("allocations-analyst", "Ana", "Lyst")
    assert ana["groups"] == ["/dagger-allocations-owners@daggers.dev"]
    assert ana["credentials"] == [{"type": "password", "value": "pw-allocations-analyst", "temporary": False}]
    assert ana["requiredActions"] == [] and ana["emailVerified"]
    (client,) = realm["clients"]
    assert client["clientId"] == "dagger-portal" and not client["publicClient"] and client["secret"] == SECRET
    assert client["redirectUris"] == ["http://127.0.0.1:23080/auth/callback"]
    assert client["standardFlowEnabled"] and not client["directAccessGrantsEnabled"]
    assert not client["implicitFlowEnabled"] and not client["serviceAccountsEnabled"]
    assert client["attributes"]["pkce.code.challenge.method"] == "S256"
    (mapper,) = client["protocolMappers"]
    assert mapper["protocolMapper"] == "oidc-group-membership-mapper"
    assert mapper["config"]["claim.name"] == "groups" and mapper["config"]["full.path"] == "false"
    assert mapper["config"]["id.token.claim"] == "true"


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"users": [{"username": "Operator", "groups": []}]}, "users[0].username 'Operator'"),
        ({"users": [{"username": "../x", "groups": []}]}, "users[0].username '../x'"),
        (
            {"users": [{"username": "a", "groups": ["dagger-fraud-owners@daggers.dev"]}], "passwords": {"a": "p"}},
            "group 'dagger-fraud-owners@daggers.dev' is not one of the realm's groups",
        ),
        ({"users": [{"username": "a", "groups": []}], "passwords": {}}, "users[0] (a): no password"),
        ({"users": [{"username": "a"}, {"username": "a"}], "passwords": {"a": "p"}}, "each username once"),
        ({"groups": ["Fraud@gojek.com"]}, "is not a group of daggers.dev"),
        (
            {"client": {"id": "dagger-portal", "secret": SECRET, "url": "http://portal.example.com"}},
            "http:// on 127.0.0.1 or localhost only",
        ),
        ({"client": {"id": "dagger-portal", "secret": SECRET, "url": 'https://x/"><script>'}}, "client.url"),
        (
            {"client": {"id": "dagger-portal", "secret": "short", "url": "https://portal.daggers.dev"}},
            "client.secret: at least 24",
        ),
        ({"client": {"id": "Portal", "secret": SECRET, "url": "https://portal.daggers.dev"}}, "client.id 'Portal'"),
        ({"realm": "master"}, "Keycloak's administration realm"),
        ({"realm": "daggers-2"}, None),
    ],
)
def test_fields_that_reach_keycloak_are_refused_unless_of_their_shape(changes, message):
    if message is None:  # the shape is fine: built
        assert _realm(**changes)["realm"] == changes["realm"]
        return
    with pytest.raises(AnsibleFilterError) as e:
        _realm(**changes)
    assert message in str(e.value)


def test_the_jdk_is_read_from_its_release_file_and_the_labs_keycloak_is_the_roles():
    keycloak_jdk = _sign_in.keycloak_jdk

    def slurped(text, path="/usr/lib/jvm/temurin-25-jdk-amd64/release"):
        return {"content": base64.b64encode(text.encode()).decode(), "source": path, "item": path}

    assert keycloak_jdk(slurped('IMPLEMENTOR="x"\nJAVA_VERSION="25.0.3"\n')) == {
        "home": "/usr/lib/jvm/temurin-25-jdk-amd64",
        "version": 25,
    }
    assert keycloak_jdk(slurped('JAVA_VERSION="17.0.12"\n'))["version"] == 17
    assert keycloak_jdk(slurped("no version here\n")) is None
    assert keycloak_jdk({"nothing": 1}) is None
    # one Keycloak release: the one `make jars` fetches is the one the role unpacks
    pom = (REPO / "jvm" / "keycloak" / "pom.xml").read_text()
    defaults = yaml.safe_load((REPO / "playbooks" / "roles" / "keycloak" / "defaults" / "main.yml").read_text())
    assert re.search(r"<keycloak.version>([^<]+)</keycloak.version>", pom).group(1) == defaults["keycloak_version"]


def test_a_lab_user_is_in_its_teams_groups_and_an_unknown_field_is_refused():
    keycloak_user_groups = _sign_in.keycloak_user_groups

    assert keycloak_user_groups({"username": "allocations-analyst", "teams": ["allocations"]}) == {
        "username": "allocations-analyst",
        "name": None,
        "groups": ["dagger-allocations-owners@daggers.dev"],
    }
    assert keycloak_user_groups({"username": "operator", "operator": True})["groups"] == [OPS]
    with pytest.raises(AnsibleFilterError, match="unknown field"):
        keycloak_user_groups({"username": "x", "group": ["admins"]})
