"""The platform's sign-in realm (Keycloak, OpenID Connect), from the teams' grants.

Who may act for a team is said once, in infra/grants/<team>.yaml (`rbac_group`: the owners' Google
group, which GKE's RBAC names too). The realm carries those groups, the platform operators' group
(infra.grants.OPERATORS_GROUP), the users given to the role, and one confidential client, the
portal, which gets each user's groups in its ID token (`groups`, plain names) and signs in through
the authorization code flow with PKCE only.

    team_group('allocations')       -> 'dagger-allocations-owners@daggers.dev'
    keycloak_realm('daggers', groups, users, passwords, client)   -> Keycloak's RealmRepresentation

Pure: the realm is a dict the role writes with to_json; nothing here talks to a server.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from ansible.errors import AnsibleFilterError

REPO = Path(__file__).resolve().parents[2]
# a user's name reaches Keycloak, the portal's audit trail and file names (its password file)
_USERNAME = re.compile(r"[a-z][a-z0-9-]{0,62}")
_CLIENT_ID = re.compile(r"[a-z][a-z0-9-]{0,62}")
# the portal's address: http only on loopback (the lab), https anywhere else
_URL = re.compile(r"(https://[a-z0-9.-]+(:[0-9]{1,5})?|http://(127\.0\.0\.1|localhost)(:[0-9]{1,5})?)")


def _grants():
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    from infra import grants

    return grants


def team_group(team):
    """The group whose members act for `team`: its grant's rbac_group."""
    grants = _grants()
    try:
        grant = grants.find(str(team))
    except grants.GrantError as e:
        raise AnsibleFilterError(f"team_group: {e}") from None
    if grant is None:
        raise AnsibleFilterError(f"team_group: team {team!r} has no grant (infra/grants/{team}.yaml)")
    return grant.rbac_group


def operators_group(_=None):
    """The platform operators' group (all teams, and failovers)."""
    return _grants().OPERATORS_GROUP


def keycloak_user_groups(user, operators=None):
    """A user of the keycloak role ({username, name, teams, operator}) with the groups it is in:
    its teams' owners' groups, and the operators' group if it is an operator."""
    if not isinstance(user, dict):
        raise AnsibleFilterError(f"keycloak_user_groups: a user is a mapping, not {type(user).__name__}")
    unknown = set(user) - {"username", "name", "teams", "operator"}
    if unknown:
        raise AnsibleFilterError(
            f"keycloak_user_groups: user {user.get('username')!r}: unknown field(s) "
            f"{', '.join(sorted(unknown))} (username, name, teams, operator)"
        )
    groups = [team_group(t) for t in user.get("teams") or []]
    if user.get("operator"):
        groups.append(operators or operators_group())
    return {"username": user.get("username"), "name": user.get("name"), "groups": groups}


def keycloak_realm(realm, groups, users, passwords, client):
    """Keycloak's representation of the realm.

    groups: the groups' names; users: [{username, name, groups: [group names]}]; passwords:
    {username: password}; client: {id, secret, url} (the portal's client id, its secret and base URL).
    """
    problems = []
    grants = _grants()
    groups = list(groups or [])
    for g in groups:
        why = grants.group_problem(g)
        if why:
            problems.append(f"group {why}")
    if len(set(groups)) != len(groups):
        problems.append(f"groups: each once ({sorted(groups)})")
    names = []
    for i, u in enumerate(users or []):
        name = (u or {}).get("username")
        if not isinstance(name, str) or not _USERNAME.fullmatch(name):
            problems.append(f"users[{i}].username {name!r}: lowercase letters, digits and '-', a letter first")
            continue
        names.append(name)
        for g in u.get("groups") or []:
            if g not in groups:
                problems.append(f"users[{i}] ({name}): group {g!r} is not one of the realm's groups")
        if not (passwords or {}).get(name):
            problems.append(f"users[{i}] ({name}): no password")
    if len(set(names)) != len(names):
        problems.append("users: each username once")
    client = client or {}
    if not _CLIENT_ID.fullmatch(str(client.get("id", ""))):
        problems.append(f"client.id {client.get('id')!r}: lowercase letters, digits and '-'")
    url = str(client.get("url", "")).rstrip("/")
    if not _URL.fullmatch(url):
        problems.append(
            f"client.url {client.get('url')!r}: https://<host>[:port], or http:// on 127.0.0.1 or "
            "localhost only (the lab)"
        )
    if not client.get("secret") or len(str(client.get("secret"))) < 24:
        problems.append("client.secret: at least 24 characters")
    if not isinstance(realm, str) or not _CLIENT_ID.fullmatch(realm):
        problems.append(f"realm {realm!r}: lowercase letters, digits and '-'")
    elif realm == "master":
        problems.append("realm 'master' is Keycloak's administration realm: name the platform's own")
    if problems:
        raise AnsibleFilterError("keycloak_realm: " + "; ".join(problems))

    return {
        "realm": realm,
        "enabled": True,
        "displayName": "Daggers",
        # TLS everywhere but loopback (Keycloak's "external": private and local addresses may use http)
        "sslRequired": "external",
        "registrationAllowed": False,
        "resetPasswordAllowed": False,
        "rememberMe": False,
        "editUsernameAllowed": False,
        "loginWithEmailAllowed": False,
        "duplicateEmailsAllowed": False,
        "verifyEmail": False,
        # a password guessed online: locked out for a while after 5 failures
        "bruteForceProtected": True,
        "failureFactor": 5,
        "waitIncrementSeconds": 60,
        "maxFailureWaitSeconds": 900,
        "accessTokenLifespan": 300,
        "ssoSessionIdleTimeout": 1800,
        "ssoSessionMaxLifespan": 36000,
        "groups": [{"name": g} for g in groups],
        "users": [
            {
                "username": u["username"],
                "enabled": True,
                "email": f"{u['username']}@{grants.GROUPS_DOMAIN}",
                "emailVerified": True,
                "firstName": (u.get("name") or u["username"]).split(" ", 1)[0],
                "lastName": ((u.get("name") or u["username"]).split(" ", 1) + [u["username"]])[1],
                "groups": [f"/{g}" for g in u.get("groups") or []],
                "credentials": [{"type": "password", "value": passwords[u["username"]], "temporary": False}],
                "requiredActions": [],
            }
            for u in users or []
        ],
        "clients": [
            {
                "clientId": client["id"],
                "name": "Daggers portal",
                "enabled": True,
                "protocol": "openid-connect",
                "publicClient": False,
                "clientAuthenticatorType": "client-secret",
                "secret": client["secret"],
                "rootUrl": url,
                "baseUrl": "/",
                "redirectUris": [f"{url}/auth/callback"],
                "webOrigins": [url],
                # the authorization code flow only: no password grant, no implicit flow, no service account
                "standardFlowEnabled": True,
                "implicitFlowEnabled": False,
                "directAccessGrantsEnabled": False,
                "serviceAccountsEnabled": False,
                "consentRequired": False,
                "fullScopeAllowed": False,
                "attributes": {
                    "pkce.code.challenge.method": "S256",
                    "post.logout.redirect.uris": f"{url}/",
                },
                "protocolMappers": [
                    {
                        "name": "groups",
                        "protocol": "openid-connect",
                        "protocolMapper": "oidc-group-membership-mapper",
                        "consentRequired": False,
                        "config": {
                            "claim.name": "groups",
                            "full.path": "false",
                            "id.token.claim": "true",
                            "access.token.claim": "true",
                            "userinfo.token.claim": "true",
                        },
                    }
                ],
            }
        ],
    }


def keycloak_jdk(slurped):
    """{home, version} of a JDK from the slurp of its `release` file (JAVA_VERSION="25.0.1"), or
    None when the file says no version."""
    import base64

    try:
        text = base64.b64decode(slurped["content"]).decode("utf-8", "replace")
        path = slurped.get("source") or slurped["item"]
    except (KeyError, TypeError, ValueError):
        return None
    m = re.search(r'^JAVA_VERSION="(\d+)', text, re.M)
    if not m:
        return None
    return {"home": str(Path(path).parent), "version": int(m.group(1))}


class FilterModule:
    def filters(self):
        return {
            "team_group": team_group,
            "operators_group": operators_group,
            "keycloak_realm": keycloak_realm,
            "keycloak_user_groups": keycloak_user_groups,
            "keycloak_jdk": keycloak_jdk,
        }
