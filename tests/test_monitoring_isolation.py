"""The lab's other servers keep the teams out too (issue 22): tried from a team's point of view.

A team's code runs on the lab as an unprivileged local user (its drivers as `dagger-spark-<team>`), with
its own credentials (its Kafka and sink passwords) and whatever it can find on loopback. So:

- Prometheus holds every team's metrics: it answers the platform's own login only (basic auth
  from --web.config.file, a bcrypt hash of a password generated once, 0600); anonymous, wrong and
  team logins get 401, and its admin and lifecycle APIs are off even for the platform.
- VictoriaMetrics (the tests' v2 write server): every API behind the platform's login, the
  internal pages behind an auth key, neither on its command line.
- supervisord: no TCP listener, its socket root's and 0700, so no other local user can stop or
  start a program, through supervisorctl or a raw connection.
- InfluxDB's backup/restore RPC, which has no login of its own (it hands out every database and
  the users' password hashes, and restores over them): an nftables rule lets only root connect.
- every listener of the lab's processes is one of these or of the servers in the README's
  isolation table, so a new one cannot appear unnoticed.
"""

from __future__ import annotations

import base64
import json
import os
import pwd
import shutil
import stat
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import xmlrpc.client
from pathlib import Path
from types import SimpleNamespace

import psutil
import pytest
import yaml

from lab import access

pytestmark = [pytest.mark.e2e]

TEAMS = ("allocations", "api-health")
# the users a team's code runs as on the lab: its drivers' (made by the spark role), and any other
# unprivileged one
UNPRIVILEGED = ("dagger-spark-allocations", "nobody")


@pytest.fixture(scope="module")
def lab(lab_env):
    base = int(lab_env["DAGGER_LAB_PORT_BASE"])
    folder = Path(lab_env["DAGGER_LAB_DIR"])
    return SimpleNamespace(
        dir=folder,
        base=base,
        prometheus=f"http://127.0.0.1:{base + 4090}",
        influx_rpc=base + 4088,
        supervisor=folder / "supervisor",
        python=folder / "runtime" / "python" / "bin" / "python",
    )


def as_user(user: str, argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    """argv as `user` (its uid and gid, no other group, no capability), in an empty environment."""
    entry = pwd.getpwnam(user)
    return subprocess.run(
        [
            "setpriv",
            f"--reuid={entry.pw_uid}",
            f"--regid={entry.pw_gid}",
            "--clear-groups",
            "--",
            "/usr/bin/env",
            "-i",
            "PATH=/usr/bin:/bin",
            *argv,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd="/",
        **kwargs,
    )


def basic(user: str, password: str) -> dict:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


def http(url: str, headers: dict | None = None, method: str = "GET", data: bytes | None = None):
    """(status, body) of a request; an HTTP error is an answer too."""
    request = urllib.request.Request(url, headers=headers or {}, method=method, data=data)
    try:
        with urllib.request.urlopen(request, timeout=30) as r:
            return r.status, r.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")


def team_logins(lab) -> dict[str, dict]:
    """Every credential a team's dagger holds, as basic auth: its Kafka principal and its sink
    user, each with its own password (the lab's secrets a driver is handed)."""
    logins = {}
    for team in TEAMS:
        principal = access.team_principal(team)
        logins[f"{team} kafka"] = basic(principal, access.password(principal, "primary", lab.dir))
        logins[f"{team} influx"] = basic(
            access.sink_user(team), access.influx_password(access.sink_user(team), lab.dir)
        )
        logins[f"{team} postgres"] = basic(
            access.sink_user(team), access.postgres_password(access.sink_user(team), lab.dir)
        )
    return logins


def platform(lab) -> dict:
    return basic(access.METRICS_USER, access.prometheus_password(lab.dir))


# -- Prometheus --------------------------------------------------------------------------------

# what a team would want of it: every series, the targets (where every dagger's /metrics is),
# the configuration, the federation of everything, its own metrics, the UI
PROMETHEUS_PAGES = [
    "/api/v1/query?query=up",
    "/api/v1/query_range?query=up&start=0&end=60&step=15",
    "/api/v1/series?match[]=up",
    "/api/v1/label/__name__/values",
    "/api/v1/targets",
    "/api/v1/status/config",
    "/api/v1/rules",
    "/federate?match[]=%7Bjob%3D~%22.%2B%22%7D",
    "/metrics",
    "/graph",
    "/-/ready",
    "/-/healthy",
]


def test_prometheus_keeps_only_a_hash_of_the_platforms_password(lab):
    bcrypt = pytest.importorskip("bcrypt")
    folder = lab.dir / "secrets" / "prometheus"
    secret = folder / f"{access.METRICS_USER}.password"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700 and stat.S_IMODE(secret.stat().st_mode) == 0o600
    password = access.prometheus_password(lab.dir)
    assert len(password) == 32

    web = yaml.safe_load((lab.dir / "prometheus" / "web.yml").read_text())
    assert list(web["basic_auth_users"]) == [access.METRICS_USER]
    hashed = web["basic_auth_users"][access.METRICS_USER]
    assert hashed.startswith("$2b$") and bcrypt.checkpw(password.encode(), hashed.encode())
    assert password not in (lab.dir / "prometheus" / "web.yml").read_text()
    # the server's own copy, for scraping itself: root's and 0600 too, in a folder closed to others
    copy = lab.dir / "prometheus" / "web.password"
    assert stat.S_IMODE(copy.stat().st_mode) == 0o600 and copy.read_text().strip() == password
    for user in UNPRIVILEGED:
        for path in (copy, secret):
            done = as_user(user, ["/usr/bin/cat", str(path)])
            assert done.returncode != 0 and "Permission denied" in done.stderr and password not in done.stdout
    # nothing secret on its command line, which every local user can read in /proc
    server = next(
        p
        for p in psutil.process_iter(["name", "cmdline"])
        if p.info["name"] == "prometheus"
        and any(a.startswith(f"--web.listen-address=127.0.0.1:{lab.base + 4090}") for a in p.info["cmdline"])
    )
    cmdline = server.info["cmdline"]
    assert f"--web.config.file={lab.dir / 'prometheus' / 'web.yml'}" in cmdline
    assert not any(password in a for a in cmdline)
    assert not any(a.startswith(("--web.enable-admin-api", "--web.enable-lifecycle")) for a in cmdline)


@pytest.mark.parametrize("page", PROMETHEUS_PAGES)
def test_prometheus_refuses_anonymous_wrong_and_team_logins(lab, page):
    url = lab.prometheus + page
    refused = {
        "anonymous": {},
        "wrong password": basic(access.METRICS_USER, "x" * 32),
        "no password": basic(access.METRICS_USER, ""),
        "the platform's password under another name": basic("admin", access.prometheus_password(lab.dir)),
        **team_logins(lab),
    }
    for who, headers in refused.items():
        status, body = http(url, headers)
        assert status == 401, (who, status, body[:200])
        assert "dagger" not in body and "up{" not in body, who
    status, body = http(url, platform(lab))
    assert status == 200, body[:300]


@pytest.mark.parametrize(
    "page, refusal",
    [
        ("/api/v1/admin/tsdb/delete_series?match[]=up", "admin APIs disabled"),
        ("/api/v1/admin/tsdb/clean_tombstones", "admin APIs disabled"),
        ("/api/v1/admin/tsdb/snapshot", "admin APIs disabled"),
        ("/-/quit", "Lifecycle API is not enabled"),
        ("/-/reload", "Lifecycle API is not enabled"),
    ],
)
def test_prometheus_admin_and_lifecycle_apis_are_off_even_for_the_platform(lab, page, refusal):
    wait_until_it_scraped_itself(lab)
    assert http(lab.prometheus + page, method="POST")[0] == 401
    got, body = http(lab.prometheus + page, platform(lab), method="POST")
    assert got >= 400 and refusal in body, (got, body[:300])
    # nothing was deleted or stopped: the series is there, the server ready
    assert http(lab.prometheus + "/-/ready", platform(lab))[0] == 200
    assert own_up(lab) == ["1"]


def own_up(lab) -> list[str]:
    """The values of Prometheus's own `up` series, asked as the platform."""
    status, body = http(
        lab.prometheus + "/api/v1/query?" + urllib.parse.urlencode({"query": 'up{job="prometheus"}'}), platform(lab)
    )
    assert status == 200, body
    return [r["value"][1] for r in json.loads(body)["data"]["result"]]


def wait_until_it_scraped_itself(lab) -> None:
    deadline = time.monotonic() + 90
    while (up := own_up(lab)) != ["1"]:
        assert time.monotonic() < deadline, f"Prometheus does not scrape itself with the login: up = {up}"
        time.sleep(3)


def test_prometheus_scrapes_itself_with_the_platforms_login(lab):
    wait_until_it_scraped_itself(lab)


# -- VictoriaMetrics (the tests' server of InfluxDB's v2 write API) ------------------------------

VM_PAGES = [
    ("GET", "/api/v1/query?query=up"),
    ("GET", "/api/v1/export?match[]=%7B__name__%3D~%22.%2B%22%7D"),
    ("GET", "/api/v1/labels"),
    ("GET", "/api/v1/series?match[]=up"),
    ("GET", "/api/v1/status/tsdb"),
    ("POST", "/api/v2/write?bucket=other"),
    ("POST", "/write?db=other"),
    ("POST", "/api/v1/import/prometheus"),
    ("POST", "/api/v1/admin/tsdb/delete_series?match[]=%7B__name__%3D~%22.%2B%22%7D"),
    ("GET", "/snapshot/create"),
    ("GET", "/snapshot/list"),
    ("GET", "/internal/force_flush"),
    ("GET", "/internal/force_merge"),
    ("GET", "/internal/resetRollupResultCache"),
]


def test_victoria_metrics_takes_its_login_from_a_private_file_never_its_command_line(victoria_metrics):
    from lab.victoriametrics import password_file

    secret = password_file(victoria_metrics.data_dir)
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600 and stat.S_IMODE(secret.parent.stat().st_mode) == 0o700
    password = victoria_metrics.password
    assert len(password) == 32
    cmdline = Path(f"/proc/{victoria_metrics.pid}/cmdline").read_text()
    assert "httpAuth" not in cmdline and "AuthKey" not in cmdline and password not in cmdline


@pytest.mark.parametrize("method, page", VM_PAGES)
def test_victoria_metrics_refuses_anonymous_wrong_and_other_logins(victoria_metrics, method, page):
    url = victoria_metrics.url + page
    data = b"probe,tag=x value=1" if method == "POST" else None
    for who, headers in {
        "anonymous": {},
        "wrong password": basic(victoria_metrics.user, "x" * 32),
        "another user": basic("dagger-allocations", victoria_metrics.password),
        "a token": {"Authorization": f"Token {victoria_metrics.user}:{victoria_metrics.password}"},
    }.items():
        status, body = http(url, headers, method=method, data=data)
        assert status == 401, (who, status, body[:200])
    status, body = http(url, {"Authorization": victoria_metrics.authorization()}, method=method, data=data)
    assert status in (200, 204), body[:300]


@pytest.mark.parametrize("page", ["/metrics", "/flags", "/debug/pprof/", "/debug/pprof/cmdline"])
def test_victoria_metrics_internal_pages_want_their_key_even_from_the_platform(victoria_metrics, page):
    from lab.victoriametrics import AUTH_KEY, password_file

    assert http(victoria_metrics.url + page)[0] == 401
    assert http(victoria_metrics.url + page, {"Authorization": victoria_metrics.authorization()})[0] == 401
    assert http(victoria_metrics.url + page + "?authKey=" + "x" * 32)[0] == 401
    key = password_file(victoria_metrics.data_dir, AUTH_KEY).read_text().strip()
    status, body = http(victoria_metrics.url + page + "?" + urllib.parse.urlencode({"authKey": key}))
    assert status == 200 and key not in body and victoria_metrics.password not in body


def test_the_v2_sink_logs_in_to_victoria_metrics_and_is_refused_at_once_with_a_wrong_password(victoria_metrics):
    import datetime as dt

    from dagger_runtime.config.model import InfluxSinkSpec
    from dagger_runtime.sinks.influx import InfluxRefused, InfluxSink, points

    at = dt.datetime(2026, 11, 22, tzinfo=dt.timezone.utc)
    names = ["label_path", "requests", "window_timestamp"]

    def sink(password: str) -> InfluxSink:
        spec = InfluxSinkSpec(
            url=victoria_metrics.url,
            api="v2",
            db_name="isolation",
            measurement_name="probe",
            username=victoria_metrics.user,
            password=password,
        )
        made = InfluxSink.__new__(InfluxSink)
        made.spec, made._client, made._http = spec, None, None
        return made

    wrong = sink("x" * 32)
    started = time.monotonic()
    with pytest.raises(InfluxRefused, match="refused the login of user 'platform'") as refused:
        wrong._post_v2("\n".join(p.to_line_protocol() for p in points("probe", names, [("/a", 1, at)])))
    assert time.monotonic() - started < 15 and "x" * 32 not in str(refused.value)
    right = sink(victoria_metrics.password)
    right._post_v2("\n".join(p.to_line_protocol() for p in points("probe", names, [("/a", 7, at)])))
    right._client.close()
    [series] = victoria_metrics.export('{__name__="probe_requests"}')
    assert series["values"] == [7]


# -- supervisord -------------------------------------------------------------------------------


def supervisord(lab) -> psutil.Process:
    pid = int((lab.supervisor / "supervisord.pid").read_text())
    process = psutil.Process(pid)
    assert "supervisord" in " ".join(process.cmdline())
    return process


def test_supervisord_listens_on_its_root_only_socket_and_no_port(lab):
    import configparser

    conf = configparser.RawConfigParser()
    conf.read(lab.supervisor / "supervisord.conf")
    assert not conf.has_section("inet_http_server")
    assert conf.get("unix_http_server", "chmod") == "0700"
    server = supervisord(lab)
    assert server.uids().effective == 0
    assert [c for c in server.net_connections(kind="inet") if c.status == psutil.CONN_LISTEN] == []
    socket_path = lab.supervisor / "supervisor.sock"
    info = socket_path.lstat()
    assert stat.S_ISSOCK(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o700 and info.st_uid == 0
    folder = lab.supervisor.stat()
    assert folder.st_uid == 0 and stat.S_IMODE(folder.st_mode) & 0o007 == 0


@pytest.mark.parametrize("user", UNPRIVILEGED)
def test_no_other_local_user_can_stop_or_start_the_labs_programs(lab, user):
    socket_path = lab.supervisor / "supervisor.sock"
    before = {p["name"]: p["pid"] for p in rpc_processes(lab)}
    assert before and all(before.values())
    # supervisorctl from the Python a team's driver runs (the lab's runtime virtualenv)
    for command in (["status"], ["stop", "all"], ["start", "all"], ["shutdown"]):
        done = as_user(
            user, [str(lab.python), "-m", "supervisor.supervisorctl", "-s", f"unix://{socket_path}", *command]
        )
        said = done.stdout + done.stderr
        assert done.returncode != 0 and "Permission denied" in said, (command, said)
        assert "RUNNING" not in said and "stopped" not in said
    # its configuration (which names the socket) is not readable either
    done = as_user(
        user,
        [
            str(lab.python),
            "-m",
            "supervisor.supervisorctl",
            "-c",
            str(lab.supervisor / "supervisord.conf"),
            "stop",
            "all",
        ],
    )
    assert done.returncode != 0 and "stopped" not in done.stdout
    # a raw connection to the socket, as XML-RPC would make it
    probe = (
        "import socket, sys\n"
        "s = socket.socket(socket.AF_UNIX)\n"
        "try:\n    s.connect(sys.argv[1])\nexcept PermissionError:\n    print('refused'); sys.exit(0)\n"
        "s.sendall(b'POST /RPC2 HTTP/1.0\\r\\nContent-Length: 0\\r\\n\\r\\n'); print('connected')\n"
    )
    done = as_user(user, ["/usr/bin/python3", "-c", probe, str(socket_path)])
    assert done.stdout.strip() == "refused", done.stdout + done.stderr
    # the platform (root) still sees every program running, none restarted
    assert {p["name"]: p["pid"] for p in rpc_processes(lab)} == before


def rpc_processes(lab) -> list[dict]:

    from supervisor.xmlrpc import SupervisorTransport

    transport = SupervisorTransport(None, None, f"unix://{lab.supervisor / 'supervisor.sock'}")
    proxy = xmlrpc.client.ServerProxy("http://127.0.0.1", transport=transport)
    return [p for p in proxy.supervisor.getAllProcessInfo() if p["statename"] == "RUNNING"]


# -- InfluxDB's backup and restore RPC ---------------------------------------------------------


@pytest.fixture
def own_folder():
    """A folder of the user's own (pytest's temporary folders are closed to other users)."""
    made = []

    def make(user: str) -> Path:
        folder = Path(tempfile.mkdtemp(prefix="dagger-monitoring-isolation-"))
        os.chown(folder, pwd.getpwnam(user).pw_uid, pwd.getpwnam(user).pw_gid)
        made.append(folder)
        return folder

    yield make
    for folder in made:
        shutil.rmtree(folder, ignore_errors=True)


def test_influxdb_rpc_is_walled_to_root(lab):
    from lab.influxdb import rpc_wall_table

    listed = json.loads(
        subprocess.run(
            ["nft", "-j", "list", "table", "inet", rpc_wall_table(lab.influx_rpc)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    rules = [item["rule"] for item in listed["nftables"] if "rule" in item]
    assert len(rules) == 1 and {"reject": {"type": "tcp reset"}} in rules[0]["expr"]


@pytest.mark.parametrize("user", UNPRIVILEGED)
def test_no_other_local_user_can_back_up_or_restore_influxdb(lab, user, own_folder):
    # InfluxDB 1.x's RPC asks no login: whoever connects gets every database and the users'
    # password hashes (`influxd backup`), or restores over them
    folder = own_folder(user)
    # (influxd backup retries a refused connection for half a minute: ten seconds of it suffice)
    done = as_user(
        user,
        [
            "/usr/bin/timeout",
            "10",
            "/usr/bin/influxd",
            "backup",
            "-portable",
            "-host",
            f"127.0.0.1:{lab.influx_rpc}",
            str(folder),
        ],
    )
    said = done.stdout + done.stderr
    assert "connection refused" in said and "backup complete" not in said, said
    # nothing came: no metastore (the users and their password hashes), no shard, no manifest
    assert {p.name: p.stat().st_size for p in folder.iterdir()} in ({}, {"meta.00.pending": 0})
    probe = (
        "import socket, sys\ntry:\n    socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=5)\n"
        "except ConnectionRefusedError:\n    print('refused')\nelse:\n    print('connected')\n"
    )
    done = as_user(user, ["/usr/bin/python3", "-c", probe, str(lab.influx_rpc)])
    assert done.stdout.strip() == "refused", done.stdout + done.stderr


def test_the_platform_still_backs_influxdb_up(lab, tmp_path):
    done = subprocess.run(
        ["/usr/bin/influxd", "backup", "-portable", "-host", f"127.0.0.1:{lab.influx_rpc}", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert any(p.suffix == ".manifest" for p in tmp_path.iterdir())


# -- every listener of the lab ------------------------------------------------------------------


def lab_processes(lab) -> list[psutil.Process]:
    return [supervisord(lab), *supervisord(lab).children(recursive=True)]


def test_every_listener_of_the_lab_is_a_server_of_the_isolation_table(lab):
    """Each listening socket of supervisord's process tree: a fixed port of the lab's layout, a
    dagger's /metrics in its cluster's range, or a port Spark or PySpark picks, each of a kind the
    README's isolation table has a row for. Anything else is a server the table does not cover."""
    base = lab.base
    fixed = {
        base + 4086: "influxdb http",
        base + 4088: "influxdb rpc",
        base + 4090: "prometheus",
        base + 4432: "postgresql",
        base + 4180: "keycloak",
        base + 4190: "keycloak management",
        base + 4080: "portal",
    }
    for cluster, offset, nodes in (("primary", 0, 3), ("mirror", 1000, 1)):
        for node in range(1, nodes + 1):
            fixed[base + offset + 100 * node + 92] = f"kafka {cluster} {node}"
            fixed[base + offset + 100 * node + 93] = f"kafka {cluster} {node} controller"
    # a Spark cluster per team in each of blue and green, 10 ports apart in the team's order
    for cluster, offset in (("blue", 2000), ("green", 3000)):
        for place, team in enumerate(("allocations", "api-health")):
            at = base + offset + 10 * place
            fixed[at + 77] = f"spark {cluster} {team} master rpc"
            fixed[at + 80] = f"spark {cluster} {team} master ui"
            fixed[at + 81] = f"spark {cluster} {team} worker ui"
    metrics = range(base + 5000, base + 5600)
    # what listens on a port it picks, by process: Spark's RPC and block transfers (the workers',
    # the drivers' and the executors', all behind spark.authenticate); PySpark's worker daemon
    # (PYTHON_WORKER_FACTORY_SECRET); a Python driver's Py4J callback server (see the table's
    # dagger drivers row)
    picked = {
        "spark worker": "org.apache.spark.deploy.worker.Worker",
        "spark driver": "org.apache.spark.deploy.worker.DriverWrapper",
        "spark executor": "org.apache.spark.executor.CoarseGrainedExecutorBackend",
        "pyspark worker daemon": "-m pyspark.daemon",
        "dagger driver": "dagger_runtime/driver.py",
        # Keycloak's JVM opens one loopback port of its own choosing beside its two fixed
        # ones (a Vert.x/Quarkus acceptor; see the table's Sign-in row)
        "keycloak": "io.quarkus.bootstrap.runner.QuarkusEntryPoint",
        # the portal's warm Spark (portal/workbench.py): a local Spark behind spark.authenticate
        # and its Py4J gateway's and callback's token (see the table's Portal row)
        "portal spark": "spark.app.name=dagger-portal",
        "portal py4j": " portal --url=",
    }
    seen, unexplained = set(), []
    for process in lab_processes(lab):
        try:
            listening = [c for c in process.net_connections(kind="inet") if c.status == psutil.CONN_LISTEN]
            name, cmdline = process.name(), " ".join(process.cmdline())
        except psutil.NoSuchProcess:
            continue
        for conn in listening:
            host, port = conn.laddr.ip, conn.laddr.port
            assert host in ("127.0.0.1", "::ffff:127.0.0.1"), (name, host, port, cmdline[:200])
            if port in fixed:
                seen.add(fixed[port])
                continue
            kind = next((k for k, marker in picked.items() if marker in cmdline), None)
            if port in metrics and kind == "dagger driver":
                continue
            if kind is None:
                unexplained.append((name, port, cmdline[:200]))
    assert unexplained == []
    assert set(fixed.values()) <= seen, set(fixed.values()) - seen
