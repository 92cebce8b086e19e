"""VictoriaMetrics (Debian's `victoria-metrics`) on loopback: a server of InfluxDB's v2 write API
for the influx sink's `api: v2`, read back through its own query API.

It holds whatever anyone wrote and answers deletes and snapshots, so every request but /health
needs the platform's own login (HTTP basic auth, `-httpAuth.*`): user `platform`, a password
generated once, 0600, in `<data dir>/secrets/victoria-metrics/platform.password`. /metrics,
/flags and /debug/pprof, which 1.79 serves to anyone otherwise, want an auth key of their own
(`authkey.password` beside it). The server gets both from its environment (`-envflag.enable`),
never on its command line, which any local user can read in /proc; Debian's 1.79 has no
password-file flag."""

from __future__ import annotations

import base64
import json
import os
import secrets
import shutil
import string
from pathlib import Path

from dagger_runtime import http_client

from .process import HOST, LocalServer, ServerError

USER = "platform"
AUTH_KEY = "authkey"  # /metrics, /flags, /debug/pprof: ?authKey=
ENV_PREFIX = "DAGGER_VM_"  # -envflag.prefix: only these variables are read as flags


def password_file(data_dir: Path, user: str = USER) -> Path:
    """The login's password, generated once (0600, in a 0700 folder) and read back after."""
    folder = Path(data_dir) / "secrets" / "victoria-metrics"
    folder.mkdir(parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    path = folder / f"{user}.password"
    if not path.exists():
        alphabet = string.ascii_letters + string.digits
        text = "".join(secrets.choice(alphabet) for _ in range(32))
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(text + "\n")
    return path


class VictoriaMetrics(LocalServer):
    name = "victoria-metrics"
    user = USER

    @property
    def password(self) -> str:
        return password_file(self.data_dir, self.user).read_text().strip()

    def command(self) -> list[str]:
        binary = shutil.which("victoria-metrics")
        if not binary:
            raise ServerError("victoria-metrics is not installed: run `make servers` (Debian package victoria-metrics)")
        # a long retention: the test traffic has fixed dates, which must not age out
        return [
            binary,
            f"-storageDataPath={self.data_dir / 'data'}",
            f"-httpListenAddr={HOST}:{self.port}",
            "-retentionPeriod=100y",
            "-loggerLevel=WARN",
            "-envflag.enable",
            f"-envflag.prefix={ENV_PREFIX}",
        ]

    def env(self) -> dict[str, str]:
        # the login from the environment (/proc/<pid>/environ is its owner's only); nothing else
        # of ours carries the prefix
        env = {k: v for k, v in super().env().items() if not k.startswith(ENV_PREFIX)}
        env[f"{ENV_PREFIX}httpAuth_username"] = self.user
        env[f"{ENV_PREFIX}httpAuth_password"] = self.password
        key = password_file(self.data_dir, AUTH_KEY).read_text().strip()
        for flag in ("metricsAuthKey", "flagsAuthKey", "pprofAuthKey"):
            env[ENV_PREFIX + flag] = key
        return env

    def healthy(self) -> bool:
        # /health answers anyone (just "OK"); the login is checked as well, so a server that
        # started without it is never taken for ready
        if http_client.get(f"{self.url}/health", timeout=1).status_code != 200:
            return False
        return self.get("/api/v1/status/tsdb", timeout=2).status_code == 200

    def authorization(self) -> str:
        """The platform's Authorization header value (HTTP basic)."""
        return "Basic " + base64.b64encode(f"{self.user}:{self.password}".encode()).decode("ascii")

    def get(self, path: str, *, timeout: float, params: dict | None = None):
        """A GET of the server's as the platform (raises http_client.Error for no answer or a refusal)."""
        return http_client.get(f"{self.url}{path}", params=params, timeout=timeout, auth=(self.user, self.password))

    def export(self, match: str) -> list[dict]:
        """Every sample of the series matching a selector, as /api/v1/export gives them."""
        self.get("/internal/force_flush", timeout=10)
        text = self.get("/api/v1/export", params={"match[]": match}, timeout=30).text
        return [json.loads(line) for line in text.splitlines() if line.strip()]
