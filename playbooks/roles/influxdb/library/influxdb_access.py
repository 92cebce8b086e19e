#!/usr/bin/python
"""Ansible module: an InfluxDB 1.x server's databases, users and grants, converged to what is declared.

The server runs with `auth-enabled = true`. The administrator is created when the server has no
user yet (the one statement InfluxDB then takes without a login); after that every statement is
sent as the administrator. For every declared user: it exists, is not an admin, logs in with its
password, and holds exactly the declared privileges (READ, WRITE or ALL) on the declared databases
and none elsewhere, so access taken away in the inventory is taken away on the server. Users not
declared here are left alone (as the kafka role leaves undeclared principals).

Names are checked against an allow-list and still quoted as InfluxQL identifiers; passwords are
quoted as InfluxQL strings: no value can add a statement.
"""

from __future__ import annotations

import base64
import json
import re
import urllib.error
import urllib.parse
import urllib.request

from ansible.module_utils.basic import AnsibleModule

DOCUMENTATION = r"""
module: influxdb_access
short_description: Converge an InfluxDB 1.x server's admin, databases, users and grants
options:
  url: {type: str, required: true, description: The HTTP API (http://host:port).}
  admin_user: {type: str, required: true}
  admin_password: {type: str, required: true, no_log: true}
  databases: {type: list, elements: str, description: Databases created when missing (never dropped).}
  users:
    type: list
    elements: dict
    description: "[{name, grants: {database: READ|WRITE|ALL}}]"
  passwords: {type: dict, no_log: true, description: Each user's password.}
"""

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
PRIVILEGES = {"READ": "READ", "WRITE": "WRITE", "ALL": "ALL PRIVILEGES"}


def ident(name: str) -> str:
    """An InfluxQL double-quoted identifier."""
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def string(value: str) -> str:
    """An InfluxQL single-quoted string literal."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


class Refused(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class Server:
    def __init__(self, url: str):
        self.url = url.rstrip("/")

    def query(self, q: str, user: str | None = None, password: str | None = None) -> list[dict]:
        """The first statement's series; Refused on a 4xx/5xx answer or an InfluxQL error."""
        headers = {"Content-Type": "application/x-www-form-urlencoded"}
        if user is not None:
            token = base64.b64encode(f"{user}:{password}".encode()).decode()
            headers["Authorization"] = f"Basic {token}"
        request = urllib.request.Request(
            f"{self.url}/query", data=urllib.parse.urlencode({"q": q}).encode(), headers=headers, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                body = json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as e:
            text = e.read().decode("utf-8", "replace")[:300]
            raise Refused(e.code, f"HTTP {e.code}: {text}") from None
        result = (body.get("results") or [{}])[0]
        if "error" in result:
            raise Refused(200, result["error"])
        return result.get("series") or []


def rows(series: list[dict]) -> list[dict]:
    out = []
    for s in series:
        for values in s.get("values") or []:
            out.append(dict(zip(s["columns"], values)))
    return out


def declared(users: list[dict], databases: list[str], admin: str) -> tuple[dict, list[str]]:
    """{user: {database: privilege}} and the problems found in the declaration."""
    wanted, problems = {}, []
    for db in databases:
        if not isinstance(db, str) or not NAME.fullmatch(db):
            problems.append(f"databases: {db!r} is not a database name (letters, digits, '_' and '-')")
    for i, user in enumerate(users):
        name = user.get("name")
        if not isinstance(name, str) or not NAME.fullmatch(name):
            problems.append(f"users[{i}].name: {name!r} is not a user name (letters, digits, '_' and '-')")
            continue
        if name == admin or name in wanted:
            problems.append(f"users[{i}].name: {name} is the administrator or declared twice")
        grants = {}
        for db, privilege in (user.get("grants") or {}).items():
            if db not in databases:
                problems.append(f"users[{i}] ({name}).grants: {db!r} is not one of the declared databases")
            if str(privilege).upper() not in PRIVILEGES:
                problems.append(f"users[{i}] ({name}).grants.{db}: {privilege!r}: one of {', '.join(PRIVILEGES)}")
            else:
                grants[db] = PRIVILEGES[str(privilege).upper()]
        wanted[name] = grants
    return wanted, problems


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            url=dict(type="str", required=True),
            admin_user=dict(type="str", required=True),
            admin_password=dict(type="str", required=True, no_log=True),
            databases=dict(type="list", elements="str", default=[]),
            users=dict(type="list", elements="dict", default=[]),
            passwords=dict(type="dict", default={}, no_log=True),
        ),
        supports_check_mode=True,
    )
    p = module.params
    admin, admin_password = p["admin_user"], p["admin_password"]
    if not NAME.fullmatch(admin):
        module.fail_json(msg=f"admin_user {admin!r} is not a user name (letters, digits, '_' and '-')")
    wanted, problems = declared(p["users"], p["databases"], admin)
    missing = [u for u in wanted if not p["passwords"].get(u)]
    if missing:
        problems.append(f"no password for {', '.join(missing)}")
    if problems:
        module.fail_json(msg="; ".join(problems))

    server, changes = Server(p["url"]), []

    def run(q: str, what: str) -> None:
        changes.append(what)
        if not module.check_mode:
            server.query(q, admin, admin_password)

    try:
        try:
            users = {r["user"]: r["admin"] for r in rows(server.query("SHOW USERS", admin, admin_password))}
        except Refused as e:
            # 401: no such user yet; 403 "create admin user first": a fresh server with auth on,
            # which answers nothing but the first admin's CREATE USER
            if e.status != 401 and not (e.status == 403 and "create admin user first" in str(e)):
                raise
            users = None
        # InfluxDB lets every request through while it has no admin user (so SHOW USERS above may
        # answer without one): create it at once. With an admin, only the right password gets here.
        if users is None or admin not in users:
            changes.append(f"created the administrator {admin}")
            if module.check_mode:
                module.exit_json(changed=True, changes=changes)
            try:
                server.query(f"CREATE USER {ident(admin)} WITH PASSWORD {string(admin_password)} WITH ALL PRIVILEGES")
            except Refused as e2:
                module.fail_json(
                    msg=f"InfluxDB at {p['url']} refuses the administrator {admin}'s password and "
                    f"already has an admin ({e2}): was its password file removed or changed? "
                    "Reset it on the server (SET PASSWORD as an admin) or start from an empty "
                    "meta/ directory"
                )
            users = {r["user"]: r["admin"] for r in rows(server.query("SHOW USERS", admin, admin_password))}
        if not users.get(admin):
            run(f"GRANT ALL PRIVILEGES TO {ident(admin)}", f"made {admin} an administrator")

        existing = {r["name"] for r in rows(server.query("SHOW DATABASES", admin, admin_password))}
        for db in p["databases"]:
            if db not in existing:
                run(f"CREATE DATABASE {ident(db)}", f"created database {db}")

        for name, grants in wanted.items():
            password = p["passwords"][name]
            if name not in users:
                run(f"CREATE USER {ident(name)} WITH PASSWORD {string(password)}", f"created user {name}")
                current = {}
            else:
                if users[name]:
                    run(f"REVOKE ALL PRIVILEGES FROM {ident(name)}", f"took admin rights from {name}")
                try:
                    server.query("SHOW DATABASES", name, password)
                except Refused as e:
                    if e.status != 401:
                        raise
                    run(f"SET PASSWORD FOR {ident(name)} = {string(password)}", f"set {name}'s password")
                current = {
                    r["database"]: r["privilege"]
                    for r in rows(server.query(f"SHOW GRANTS FOR {ident(name)}", admin, admin_password))
                    if r["privilege"] != "NO PRIVILEGES"
                }
            for db, privilege in grants.items():
                if current.get(db) != privilege:
                    run(f"GRANT {privilege} ON {ident(db)} TO {ident(name)}", f"granted {privilege} on {db} to {name}")
            for db in sorted(set(current) - set(grants)):
                run(f"REVOKE ALL PRIVILEGES ON {ident(db)} FROM {ident(name)}", f"revoked {name}'s access to {db}")
    except Refused as e:
        module.fail_json(msg=f"InfluxDB at {p['url']}: {e}", changes=changes)
    except (urllib.error.URLError, OSError) as e:
        module.fail_json(msg=f"InfluxDB at {p['url']} does not answer: {e}", changes=changes)
    module.exit_json(changed=bool(changes), changes=changes)


if __name__ == "__main__":
    main()
