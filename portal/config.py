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


def _url(value: str, what: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment \
            or parts.username or parts.password:
        raise DaggerError(f"{what} {value!r} is not an http(s) URL without query, fragment or login")
    if parts.scheme == "http" and parts.hostname not in _LOOPBACK:
        raise DaggerError(f"{what} {value!r}: http only on loopback; use https")
    return value.rstrip("/")


def _secret(path: str | Path, what: str, *, min_length: int) -> str:
    p = Path(path)
    try:
        if p.stat().st_mode & 0o077:
            raise DaggerError(f"{what} file {p} may be read by others (mode {p.stat().st_mode & 0o777:o}): "
                              "make it 0600")
        value = p.read_text().strip()
    except OSError as e:
        raise DaggerError(f"cannot read the {what} file {p}: {e.strerror}") from None
    if len(value) < min_length:
        raise DaggerError(f"the {what} in {p} is shorter than {min_length} characters")
    return value


@dataclass(frozen=True)
class PortalConfig:
    url: str                      # where users reach the portal (its redirect URI is url + /auth/callback)
    issuer: str                   # the OpenID Connect provider's issuer (Keycloak: <server>/realms/<realm>)
    client_id: str
    client_secret: str
    session_key: str              # signs the session cookie
    registry_url: str
    clusters_dir: str | None = None
    grants_dir: str | None = None

    @classmethod
    def load(cls, *, url: str, issuer: str, client_id: str, client_secret_file: str, session_key_file: str,
             registry_url: str, clusters_dir: str | None = None, grants_dir: str | None = None) -> PortalConfig:
        if not _CLIENT_ID.fullmatch(client_id or ""):
            raise DaggerError(f"client id {client_id!r}: letters, digits, '.', '_' and '-'")
        return cls(url=_url(url, "the portal's URL"), issuer=_url(issuer, "the issuer"), client_id=client_id,
                   client_secret=_secret(client_secret_file, "client secret", min_length=24),
                   session_key=_secret(session_key_file, "session key", min_length=32),
                   registry_url=registry_url, clusters_dir=clusters_dir, grants_dir=grants_dir)
