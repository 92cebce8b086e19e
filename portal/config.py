"""The portal's settings: where it is served, who signs its users in, and where the daggers are.
Secrets (the client's secret, the session key) are read from files, never from the command line
or the environment, so no process listing or log shows them."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from dagger_runtime.errors import DaggerError

# http only on loopback (the lab); https anywhere else
_LOOPBACK = ("127.0.0.1", "localhost", "::1")
_CLIENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_HOST = re.compile(r"[A-Za-z0-9][A-Za-z0-9.-]{0,252}")
_BOOTSTRAP = re.compile(r"[A-Za-z0-9][A-Za-z0-9.-]{0,252}:[0-9]{1,5}(,[A-Za-z0-9][A-Za-z0-9.-]{0,252}:[0-9]{1,5})*")


def _url(value: str, what: str) -> str:
    parts = urlsplit(value)
    if (
        parts.scheme not in ("http", "https")
        or not parts.hostname
        or parts.query
        or parts.fragment
        or parts.username
        or parts.password
    ):
        raise DaggerError(f"{what} {value!r} is not an http(s) URL without query, fragment or login")
    if parts.scheme == "http" and parts.hostname not in _LOOPBACK:
        raise DaggerError(f"{what} {value!r}: http only on loopback; use https")
    return value.rstrip("/")


def _secret(path: str | Path, what: str, *, min_length: int) -> str:
    p = Path(path)
    try:
        if p.stat().st_mode & 0o077:
            raise DaggerError(
                f"{what} file {p} may be read by others (mode {p.stat().st_mode & 0o777:o}): make it 0600"
            )
        value = p.read_text().strip()
    except OSError as e:
        raise DaggerError(f"cannot read the {what} file {p}: {e.strerror}") from None
    if len(value) < min_length:
        raise DaggerError(f"the {what} in {p} is shorter than {min_length} characters")
    return value


@dataclass(frozen=True)
class PortalConfig:
    url: str  # where users reach the portal (its redirect URI is url + /auth/callback)
    issuer: str  # the OpenID Connect provider's issuer (Keycloak: <server>/realms/<realm>)
    client_id: str
    client_secret: str
    session_key: str  # signs the session cookie
    registry_url: str
    clusters_dir: str | None = None
    grants_dir: str | None = None
    # where new daggers read and write (portal.drafts.Servers); no Kafka: no creating in the portal
    kafka: str | None = None
    influx_url: str | None = None
    postgres: tuple[str, int] | None = None
    # the platform's Prometheus, for the daggers' charts and alerts (none: the pages show neither)
    prometheus_url: str | None = None
    prometheus_user: str | None = None
    prometheus_password: str | None = None

    @classmethod
    def load(
        cls,
        *,
        url: str,
        issuer: str,
        client_id: str,
        client_secret_file: str,
        session_key_file: str,
        registry_url: str,
        clusters_dir: str | None = None,
        grants_dir: str | None = None,
        kafka: str | None = None,
        influx_url: str | None = None,
        postgres: str | None = None,
        prometheus_url: str | None = None,
        prometheus_user: str | None = None,
        prometheus_password_file: str | None = None,
    ) -> PortalConfig:
        if not _CLIENT_ID.fullmatch(client_id or ""):
            raise DaggerError(f"client id {client_id!r}: letters, digits, '.', '_' and '-'")
        if kafka is not None and not _BOOTSTRAP.fullmatch(kafka):
            raise DaggerError(f"Kafka's bootstrap servers {kafka!r}: HOST:PORT[,HOST:PORT...]")
        pg = None
        if postgres is not None:
            host, _, port = postgres.rpartition(":")
            if not _HOST.fullmatch(host) or not port.isdigit() or not 0 < int(port) < 65536:
                raise DaggerError(f"PostgreSQL {postgres!r}: HOST:PORT")
            pg = (host, int(port))
        return cls(
            url=_url(url, "the portal's URL"),
            issuer=_url(issuer, "the issuer"),
            client_id=client_id,
            client_secret=_secret(client_secret_file, "client secret", min_length=24),
            session_key=_secret(session_key_file, "session key", min_length=32),
            registry_url=registry_url,
            clusters_dir=clusters_dir,
            grants_dir=grants_dir,
            kafka=kafka,
            influx_url=None if influx_url is None else _url(influx_url, "InfluxDB's URL"),
            postgres=pg,
            prometheus_url=None if prometheus_url is None else _url(prometheus_url, "Prometheus's URL"),
            prometheus_user=prometheus_user,
            prometheus_password=None
            if prometheus_password_file is None
            else _secret(prometheus_password_file, "Prometheus password", min_length=16),
        )
