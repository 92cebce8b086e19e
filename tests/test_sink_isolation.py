"""The sinks' servers on the lab keep each team to its own data (issue 22): tried from a team's own
credentials, as its dagger holds them.

PostgreSQL: a login role per team (dagger-<team>) owning its team's database, the only one it may
log in to (pg_hba.conf) or connect to (CONNECT taken from PUBLIC); the registry's role owns only
the registry. InfluxDB: authentication on, a user per team with READ and WRITE on its team's
database only. Every other database, spelling and statement is tried and must be refused; the
team's own write must go through, through the sinks' own code with the credential from the spec.
"""

from __future__ import annotations

import base64
import datetime as dt
import importlib.util
import json
import stat
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path
from types import SimpleNamespace

import psycopg
import pytest
import yaml

from dagger_runtime.errors import DaggerError
from dagger_runtime.sinks.influx import InfluxSink, points
from dagger_runtime.sinks.postgres import PostgresSink, upsert_statement
from lab import access

pytestmark = [pytest.mark.e2e]

TEAM, OTHER = "api-health", "allocations"
EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "daggers" / "api_health.yaml"
COLUMNS = [
    {"name": "label_path", "type": "string"},
    {"name": "label_status_code", "type": "string"},
    {"name": "requests", "type": "bigint"},
    {"name": "window_timestamp", "type": "timestamp"},
]


@pytest.fixture(scope="module")
def lab(lab_env):
    base = int(lab_env["DAGGER_LAB_PORT_BASE"])
    return SimpleNamespace(
        dir=Path(lab_env["DAGGER_LAB_DIR"]), pg_port=base + 4432, influx=f"http://127.0.0.1:{base + 4086}"
    )


# -- PostgreSQL --------------------------------------------------------------------------------


def pg_login(lab, db: str, team: str = TEAM, user: str | None = None, password: str | None = None):
    user = user or access.sink_user(team)
    password = password if password is not None else access.postgres_password(access.sink_user(team), lab.dir)
    return psycopg.connect(
        host="127.0.0.1", port=lab.pg_port, dbname=db, user=user, password=password, connect_timeout=10, autocommit=True
    )


def superuser(lab, db: str):
    """The platform's tooling: the superuser through the server's socket (peer authentication)."""
    return psycopg.connect(
        host=str(lab.dir / "postgresql" / "run"),
        port=lab.pg_port,
        dbname=db,
        user="postgres",
        connect_timeout=10,
        autocommit=True,
    )


def registry_url(lab) -> str:
    return (lab.dir / "secrets" / "registry.url").read_text().strip()


def test_the_sinks_passwords_are_private_files_of_the_lab(lab):
    for server, names in (
        ("postgresql", ["daggers", "dagger-allocations", "dagger-api-health"]),
        ("influxdb", ["admin", "dagger-allocations", "dagger-api-health"]),
    ):
        folder = lab.dir / "secrets" / server
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
        for name in names:
            path = folder / f"{name}.password"
            assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
            assert len(path.read_text().strip()) == 32
    # every identity has a password of its own
    secrets = [access.postgres_password(u, lab.dir) for u in ("daggers", "dagger-allocations", "dagger-api-health")]
    secrets += [access.influx_password(u, lab.dir) for u in ("admin", "dagger-allocations", "dagger-api-health")]
    assert len(set(secrets)) == 6


def test_a_teams_role_writes_and_reads_its_own_database(lab):
    table = f"t_{uuid.uuid4().hex[:8]}"
    with pg_login(lab, access.sink_database(TEAM)) as conn:
        assert conn.execute("SELECT current_user, current_database()").fetchone() == ("dagger-api-health", "api-health")
        conn.execute(f"CREATE TABLE {table} (k int PRIMARY KEY, v int)")
        conn.execute(f"INSERT INTO {table} VALUES (1, 1) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v")
        conn.execute(f"INSERT INTO {table} VALUES (1, 2) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v")
        assert conn.execute(f"SELECT k, v FROM {table}").fetchall() == [(1, 2)]
        conn.execute(f"DROP TABLE {table}")


# every database a team's role is not to reach, in several spellings: the registry's, the other
# team's, the server's own, and case or quote variants that would name them if folded or unquoted
FOREIGN_DATABASES = [
    "daggers",
    "allocations",
    "postgres",
    "template1",
    "template0",
    "DAGGERS",
    "Daggers",
    '"daggers"',
    "Allocations",
    "API-HEALTH",
    "api_health",
    "api-health ",
    "daggers\x00",
]


@pytest.mark.parametrize("db", FOREIGN_DATABASES)
def test_a_teams_role_cannot_log_in_to_any_other_database(lab, db):
    with pytest.raises((psycopg.OperationalError, ValueError)) as refused:
        pg_login(lab, db).close()
    assert "no pg_hba.conf entry" in str(refused.value) or "NUL" in str(refused.value), str(refused.value)


@pytest.mark.parametrize(
    "user, db",
    [
        ("daggers", "daggers"),  # the registry's role, with the team's password
        ("daggers", "api-health"),
        ("dagger-allocations", "allocations"),  # the other team's role, with the team's password
        ("DAGGER-API-HEALTH", "api-health"),  # another spelling of the team's own role
        ("postgres", "postgres"),  # the superuser over TCP
        ("postgres", "api-health"),
    ],
)
def test_the_teams_password_opens_no_other_role(lab, user, db):
    password = access.postgres_password(access.sink_user(TEAM), lab.dir)
    with pytest.raises(psycopg.OperationalError, match="password authentication failed|no pg_hba.conf entry"):
        pg_login(lab, db, user=user, password=password).close()


def test_even_past_pg_hba_a_teams_role_holds_no_privilege_on_the_registry_or_the_other_teams_tables(lab):
    """The second wall, as the server's catalogue says: were pg_hba.conf to let the role in, it
    could neither connect to another database nor read or write a table there."""
    from dagger_runtime.lifecycle.registry import Registry

    Registry(registry_url(lab)).close()  # the registry's tables exist
    other_table = f"t_{uuid.uuid4().hex[:8]}"
    with pg_login(lab, access.sink_database(OTHER), team=OTHER) as conn:
        conn.execute(f"CREATE TABLE {other_table} (k int PRIMARY KEY)")
    try:
        with superuser(lab, "postgres") as conn:
            connect = conn.execute(
                "SELECT datname, has_database_privilege(%s, datname, 'CONNECT'), "
                "has_database_privilege(%s, datname, 'TEMP') FROM pg_database WHERE datallowconn",
                (access.sink_user(TEAM), access.sink_user(TEAM)),
            ).fetchall()
            attrs = conn.execute(
                "SELECT rolname, rolsuper, rolcreatedb, rolcreaterole, rolreplication, rolbypassrls "
                "FROM pg_roles WHERE rolname IN ('daggers', 'dagger-api-health', "
                "'dagger-allocations') ORDER BY rolname"
            ).fetchall()
        assert {d: (c, t) for d, c, t in connect} == {
            "postgres": (False, False),
            "template1": (False, False),
            "daggers": (False, False),
            "keycloak": (False, False),  # the sign-in's own database
            "allocations": (False, False),
            "api-health": (True, True),
        }
        assert all(not any(flags) for _, *flags in attrs) and len(attrs) == 3, attrs
        privileges = "SELECT, INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER"
        with superuser(lab, "daggers") as conn:
            for table in ("daggers", "versions", "events"):
                assert conn.execute(
                    "SELECT has_table_privilege(%s, %s, %s)", (access.sink_user(TEAM), f"public.{table}", privileges)
                ).fetchone() == (False,)
            owner = conn.execute(
                "SELECT DISTINCT tableowner FROM pg_tables WHERE tablename IN ('daggers', 'versions', 'events')"
            ).fetchall()
            assert owner == [("daggers",)]
        with superuser(lab, "allocations") as conn:
            assert conn.execute(
                "SELECT has_table_privilege(%s, %s, %s)", (access.sink_user(TEAM), f"public.{other_table}", privileges)
            ).fetchone() == (False,)
            assert conn.execute(
                "SELECT has_schema_privilege(%s, 'public', 'CREATE')", (access.sink_user(TEAM),)
            ).fetchone() == (False,)
    finally:
        with pg_login(lab, access.sink_database(OTHER), team=OTHER) as conn:
            conn.execute(f"DROP TABLE {other_table}")


@pytest.mark.parametrize(
    "statement, refusal",
    [
        ("SET ROLE daggers", "permission denied"),
        ("SET SESSION AUTHORIZATION daggers", "permission denied"),
        ('ALTER ROLE "dagger-api-health" CREATEDB', "permission denied"),
        ('GRANT CONNECT ON DATABASE daggers TO "dagger-api-health"', "permission denied"),
        ("CREATE DATABASE daggers2", "permission denied"),
        ("CREATE ROLE helper LOGIN", "permission denied"),
        ("CREATE EXTENSION dblink", "permission denied"),
        ("COPY (SELECT 1) TO PROGRAM 'true'", "pg_execute_server_program"),
        ("SELECT pg_read_file('secrets/registry.url')", "permission denied"),
        ("SELECT * FROM daggers.public.daggers", "cross-database references"),
    ],
)
def test_inside_its_own_database_a_teams_role_cannot_reach_out(lab, statement, refusal):
    with pg_login(lab, access.sink_database(TEAM)) as conn:
        with pytest.raises(psycopg.Error, match=refusal):
            conn.execute(statement)


def test_the_registry_refuses_a_teams_credential_with_a_clear_error(lab):
    from dagger_runtime.lifecycle.registry import Registry

    password = access.postgres_password(access.sink_user(TEAM), lab.dir)
    for user in ("dagger-api-health", "daggers"):
        url = f"postgresql+psycopg://{user}:{password}@127.0.0.1:{lab.pg_port}/daggers"
        with pytest.raises(DaggerError, match=f"the registry at .* refused role '{user}'") as refused:
            Registry(url)
        assert password not in str(refused.value)


# -- the sinks' own code, with the credential from the spec ------------------------------------


def job_with_sink(sink: dict, env: dict):
    """The api-health example with this sink, loaded as a dagger loads it (${VAR} from env)."""
    from dagger_runtime.config import loads_job

    job = yaml.safe_load(EXAMPLE.read_text())
    job["sink"] = sink
    return loads_job(yaml.safe_dump(job), fmt="yaml", source="api_health.yaml", env=env)


def rows(n: int = 3) -> list[tuple]:
    at = dt.datetime(2026, 11, 22, 0, 0, 30, tzinfo=dt.timezone.utc)
    return [(f"/v1/p{i}", "200", 10 + i, at) for i in range(n)]


def postgres_sink(lab, team: str, database: str):
    sink = access.team_postgres_sink(team, "127.0.0.1", lab.pg_port, f"api_health_{uuid.uuid4().hex[:6]}")
    sink["url"] = f"postgresql://127.0.0.1:{lab.pg_port}/{database}"
    job = job_with_sink({"type": "postgres", "postgres": sink}, access.team_sink_env(team, lab.dir))
    return PostgresSink(SimpleNamespace(job=job), COLUMNS, retry_for_s=60)


def test_the_postgres_sink_logs_in_as_the_team_and_upserts_into_its_own_database(lab):
    from dagger_runtime.sinks.postgres import upsert_statement

    sink = postgres_sink(lab, TEAM, access.sink_database(TEAM))
    try:
        assert sink.spec.user == "dagger-api-health"
        statement = upsert_statement(sink.spec.table, sink.names, sink.keys)
        sink._retry("batch 0", lambda: sink._upsert(statement, [sink._values(r) for r in rows()]))
        sink._retry("batch 1", lambda: sink._upsert(statement, [sink._values(r) for r in rows()]))
    finally:
        sink.close()
    with pg_login(lab, access.sink_database(TEAM)) as conn:
        got = conn.execute(f"SELECT label_path, requests FROM {sink.spec.table} ORDER BY 1").fetchall()
        conn.execute(f"DROP TABLE {sink.spec.table}")
    assert got == [("/v1/p0", 10), ("/v1/p1", 11), ("/v1/p2", 12)]


@pytest.mark.parametrize("database", ["daggers", "allocations", "Allocations", "postgres"])
def test_the_postgres_sink_pointed_elsewhere_is_refused_at_once_naming_the_sink(lab, database):
    sink = postgres_sink(lab, TEAM, database)
    password = sink.spec.password.get_secret_value()
    started = time.monotonic()
    with pytest.raises(Exception) as refused:
        sink._retry(
            "batch 0",
            lambda: sink._upsert(
                upsert_statement(sink.spec.table, sink.names, sink.keys), [sink._values(r) for r in rows()]
            ),
        )
    message = str(refused.value)
    # a refused login is not retried: it would be refused again
    assert time.monotonic() - started < 15 and sink.stats.retries == 0
    assert message.startswith(
        f"sink postgres: PostgreSQL at 127.0.0.1:{lab.pg_port} database {database!r} "
        "as role 'dagger-api-health' refused the login"
    ), message
    assert "no pg_hba.conf entry" in message and password not in message


@pytest.mark.parametrize("table", ["pg_catalog.api_health", "information_schema.api_health"])
def test_the_postgres_sink_refused_a_table_says_which_sink_role_and_table(lab, table):
    from dagger_runtime.sinks.postgres import upsert_statement

    sink = postgres_sink(lab, TEAM, access.sink_database(TEAM))
    sink.spec = sink.spec.model_copy(update={"table": table})
    with pytest.raises(Exception) as refused:
        sink._retry(
            "batch 0",
            lambda: sink._upsert(upsert_statement(table, sink.names, sink.keys), [sink._values(r) for r in rows()]),
        )
    sink.close()
    assert sink.stats.retries == 0
    assert str(refused.value).startswith(
        f"sink postgres: PostgreSQL at 127.0.0.1:{lab.pg_port} database 'api-health' as role 'dagger-api-health' "
        f"may not write table {table!r}: permission denied"
    ), str(refused.value)


# -- InfluxDB ----------------------------------------------------------------------------------


def influx(
    lab, path: str, params: dict, *, user: str | None = None, password: str | None = None, body: str | None = None
) -> tuple[int, dict]:
    """POST to the HTTP API; (status, JSON answer)."""
    data = body.encode() if body is not None else urllib.parse.urlencode(params).encode()
    url = f"{lab.influx}{path}" + ("?" + urllib.parse.urlencode(params) if body is not None else "")
    request = urllib.request.Request(url, data=data, method="POST")
    if user is not None:
        request.add_header("Authorization", "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode())
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            status, text = response.status, response.read()
    except urllib.error.HTTPError as e:
        status, text = e.code, e.read()
    return status, (json.loads(text) if text.strip() else {})


def as_team(lab, team: str = TEAM) -> dict:
    return {"user": access.sink_user(team), "password": access.influx_password(access.sink_user(team), lab.dir)}


def as_admin(lab) -> dict:
    return {"user": "admin", "password": access.influx_password("admin", lab.dir)}


def series(answer: dict) -> list:
    result = answer["results"][0]
    assert "error" not in result, result
    return result.get("series", [])


def databases(lab) -> list[str]:
    status, answer = influx(lab, "/query", {"q": "SHOW DATABASES"}, **as_admin(lab))
    assert status == 200
    return sorted(v[0] for v in series(answer)[0]["values"])


def count(lab, db: str, measurement: str) -> int:
    status, answer = influx(lab, "/query", {"q": f'SELECT count(*) FROM "{measurement}"', "db": db}, **as_admin(lab))
    assert status == 200, answer
    found = series(answer)
    return found[0]["values"][0][1] if found else 0


def test_influxdb_has_each_teams_database_and_an_admin(lab):
    assert {"allocations", "api-health"} <= set(databases(lab))
    status, answer = influx(lab, "/query", {"q": "SHOW USERS"}, **as_admin(lab))
    users = {u: admin for u, admin in series(answer)[0]["values"]}
    assert users["admin"] is True
    assert users["dagger-allocations"] is False and users["dagger-api-health"] is False


@pytest.mark.parametrize(
    "path, params, body",
    [
        ("/query", {"q": "SHOW DATABASES"}, None),
        ("/query", {"q": "SELECT * FROM m", "db": "api-health"}, None),
        ("/query", {"q": "SELECT * FROM m", "db": "allocations"}, None),
        ("/query", {"q": 'DROP DATABASE "allocations"'}, None),
        ("/query", {"q": "CREATE USER x WITH PASSWORD 'y' WITH ALL PRIVILEGES"}, None),
        ("/write", {"db": "api-health"}, "anon value=1"),
        ("/write", {"db": "allocations"}, "anon value=1"),
        ("/write", {"db": "api-health", "u": "", "p": ""}, "anon value=1"),
        ("/write", {"db": "api-health", "u": "dagger-api-health", "p": "wrong"}, "anon value=1"),
        ("/write", {"db": "api-health", "u": "admin"}, "anon value=1"),
    ],
)
def test_influxdb_refuses_anonymous_and_wrong_logins(lab, path, params, body):
    before = databases(lab)
    status, answer = influx(lab, path, params, body=body)
    assert status == 401, answer
    assert databases(lab) == before
    assert count(lab, "api-health", "anon") == 0 and count(lab, "allocations", "anon") == 0


def test_a_teams_user_writes_and_reads_its_own_database(lab):
    measurement = f"own_{uuid.uuid4().hex[:6]}"
    status, answer = influx(
        lab, "/write", {"db": "api-health", "precision": "ms"}, body=f"{measurement} v=1 1000", **as_team(lab)
    )
    assert status == 204, answer
    status, answer = influx(lab, "/query", {"q": f'SELECT v FROM "{measurement}"', "db": "api-health"}, **as_team(lab))
    assert status == 200 and series(answer)[0]["values"] == [["1970-01-01T00:00:01Z", 1]]
    # and sees no other database
    status, answer = influx(lab, "/query", {"q": "SHOW DATABASES"}, **as_team(lab))
    assert [v[0] for v in series(answer)[0]["values"]] == ["api-health"]


# the other team's database, the spellings that would name it if InfluxDB folded case or quotes,
# and databases no team has
@pytest.mark.parametrize(
    "db",
    [
        "allocations",
        "Allocations",
        "ALLOCATIONS",
        '"allocations"',
        "allocations ",
        "_internal",
        "daggers",
        "API-HEALTH",
    ],
)
def test_a_teams_user_cannot_write_another_database(lab, db):
    measurement = f"cross_{uuid.uuid4().hex[:6]}"
    before = databases(lab)
    status, answer = influx(lab, "/write", {"db": db}, body=f"{measurement} v=1", **as_team(lab))
    # 403 where the database exists, 404 where it does not (and a write creates none)
    assert status in (403, 404), answer
    assert status == 403 or "database not found" in answer["error"]
    assert databases(lab) == before
    for existing in before:
        assert count(lab, existing, measurement) == 0


@pytest.mark.parametrize(
    "q, refusal",
    [
        ("SELECT * FROM m", "requires READ on allocations"),
        ('SELECT * FROM "allocations"."autogen"."m"', "requires READ on allocations"),
        ('SELECT * INTO "allocations"."autogen"."x" FROM "api-health"."autogen"."m"', "requires WRITE on allocations"),
        ('SHOW MEASUREMENTS ON "allocations"', "requires READ on allocations"),
        ('DROP SERIES FROM "m"', "requires WRITE on allocations"),
        ('DROP MEASUREMENT "m"', "requires admin privilege"),
        ('DROP DATABASE "allocations"', "requires admin privilege"),
        ('CREATE DATABASE "api-health2"', "requires admin privilege"),
        ('GRANT ALL ON "allocations" TO "dagger-api-health"', "requires admin privilege"),
        ('GRANT ALL PRIVILEGES TO "dagger-api-health"', "requires admin privilege"),
        ("CREATE USER helper WITH PASSWORD 'x' WITH ALL PRIVILEGES", "requires admin privilege"),
        ("SET PASSWORD FOR admin = 'x'", "requires admin privilege"),
        ("SHOW USERS", "requires admin privilege"),
    ],
)
def test_a_teams_user_cannot_query_or_administer_another_database(lab, q, refusal):
    status, answer = influx(lab, "/query", {"q": q, "db": "allocations"}, **as_team(lab))
    assert status == 403 and refusal in answer["error"], answer
    assert "'x'" not in answer["error"]  # passwords in statements are redacted in the answer


def influx_sink(lab, team: str, database: str, user_of: str | None = None):
    sink = access.team_influx_sink(team, lab.influx, f"api_health_{uuid.uuid4().hex[:6]}")
    sink["db_name"] = database
    # the team's variable, holding its own password (or, user_of, another team's)
    password = access.influx_password(access.sink_user(user_of or team), lab.dir)
    job = job_with_sink({"type": "influx", "influx": sink}, {access.influx_secret_env(team): password})
    return InfluxSink(SimpleNamespace(job=job), COLUMNS, retry_for_s=60)


def influx_body(sink) -> str:
    """The test rows as the sink posts them: line protocol (influxdb-client's, the Python path)."""
    lines = [p.to_line_protocol() for p in points(sink.spec.measurement_name, [c["name"] for c in COLUMNS], rows())]
    return "\n".join(lines)


def test_the_influx_sink_writes_its_teams_database_with_the_credential_from_the_spec(lab):
    sink = influx_sink(lab, TEAM, "api-health")
    try:
        assert sink.spec.username == "dagger-api-health"
        sink._retry("batch 0", lambda: sink._post(influx_body(sink)))
    finally:
        sink.close()
    assert count(lab, "api-health", sink.spec.measurement_name) == 3


@pytest.mark.parametrize(
    "database, user_of, status, says",
    [
        ("allocations", None, 403, "does not let user 'dagger-api-health' write there (database 'allocations'"),
        ("api-health", OTHER, 401, "refused the login of user 'dagger-api-health'"),  # another team's password
    ],
)
def test_the_influx_sink_refused_says_which_sink_user_and_database_at_once(lab, database, user_of, status, says):
    sink = influx_sink(lab, TEAM, database, user_of)
    password = sink.spec.password.get_secret_value()
    started = time.monotonic()
    with pytest.raises(Exception) as refused:
        sink._retry("batch 0", lambda: sink._post(influx_body(sink)))
    message = str(refused.value)
    assert time.monotonic() - started < 15 and sink.stats.retries == 0
    assert message.startswith(f"sink influx: InfluxDB at {lab.influx} ") and says in message, message
    assert f"HTTP {status}" in message and password not in message
    assert count(lab, "allocations", sink.spec.measurement_name) == 0
    assert count(lab, "api-health", sink.spec.measurement_name) == 0


# -- the demo hands each dagger its team's sink credential only ---------------------------------


def test_the_demos_specs_name_their_teams_sink_identity_and_secret_only(lab, lab_env, tmp_path, monkeypatch):
    from dagger_runtime.config import load_job
    from dagger_runtime.lifecycle.spark import referenced_env
    from lab import demo

    monkeypatch.setenv("DAGGER_LAB_PORT_BASE", lab_env["DAGGER_LAB_PORT_BASE"])
    specs = demo.job_specs(tmp_path)
    sinks = {}
    for name, path in specs.items():
        text = path.read_text()
        team = yaml.safe_load(text)["team"]
        # what `dagger deploy` would hand the driver: the team's own secrets, nothing else
        env = {**access.team_env(team, lab=lab.dir), **access.team_sink_env(team, lab.dir)}
        for variable, value in env.items():
            monkeypatch.setenv(variable, value)
        names = referenced_env(text, team)
        assert all(n.startswith(f"DAGGER_SECRET_{team.upper().replace('-', '_')}__") for n in names), names
        for secret in env.values():
            assert secret not in text  # only ${VAR} references are written
        job = load_job(path, env=env)
        sinks[name] = (team, job.sink.type, job.sink.influx or job.sink.postgres)
    for name, (team, kind, spec) in sinks.items():
        if kind == "influx":
            assert (spec.username, spec.db_name) == (access.sink_user(team), access.sink_database(team)), name
            assert spec.password.get_secret_value() == access.influx_password(access.sink_user(team), lab.dir)
        elif kind == "postgres":
            assert spec.user == access.sink_user(team) and spec.url.endswith(f"/{access.sink_database(team)}")
            assert spec.password.get_secret_value() == access.postgres_password(access.sink_user(team), lab.dir)
            # the registry's password is nowhere near a team's dagger
            assert access.postgres_password("daggers", lab.dir) not in specs[name].read_text()
    assert {k for _, k, _ in sinks.values()} >= {"influx", "postgres"}


# -- the influxdb role's module: what it accepts before any statement is sent -------------------


def _influxdb_access():
    path = (
        Path(__file__).resolve().parent.parent / "playbooks" / "roles" / "influxdb" / "library" / "influxdb_access.py"
    )
    spec = importlib.util.spec_from_file_location("influxdb_access", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    "users, databases, problem",
    [
        ([{"name": 'x" WITH ALL PRIVILEGES', "grants": {}}], [], "is not a user name"),
        ([{"name": "x\nSHOW USERS", "grants": {}}], [], "is not a user name"),
        ([{"name": "x", "grants": {"a": "READ"}}], ["a;DROP DATABASE b"], "is not a database name"),
        ([{"name": "x", "grants": {"b": "READ"}}], ["a"], "'b' is not one of the declared databases"),
        ([{"name": "x", "grants": {"a": "ADMIN"}}], ["a"], "'ADMIN': one of READ, WRITE, ALL"),
        ([{"name": "admin", "grants": {}}], [], "is the administrator or declared twice"),
    ],
)
def test_the_influxdb_module_refuses_hostile_declarations(users, databases, problem):
    _, problems = _influxdb_access().declared(users, databases, "admin")
    assert any(problem in p for p in problems), problems


def test_the_influxdb_module_quotes_identifiers_and_strings():
    module = _influxdb_access()
    assert module.ident('a"b\\c') == '"a\\"b\\\\c"'
    assert module.string("it's\\") == "'it\\'s\\\\'"
