"""`dagger portal`: the portal under waitress (a production WSGI server of threads, pure Python).

    dagger portal --url https://portal.daggers.dev --issuer https://sso.daggers.dev/realms/daggers \\
        --client-secret-file /etc/daggers/portal.secret --session-key-file /etc/daggers/portal.key \\
        --registry @/etc/daggers/registry.url --listen 127.0.0.1:8080
"""
from __future__ import annotations

import argparse
import logging
import os
import secrets
from pathlib import Path

DEFAULT_THREADS = 8


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("portal", help="serve the web portal (sign-in through OpenID Connect)",
                       description="Serve the web portal: analysts sign in through the platform's OpenID Connect "
                                   "provider and see, create and change their team's daggers.")
    p.add_argument("--url", required=True, help="where users reach the portal (its redirect URI is URL/auth/callback)")
    p.add_argument("--issuer", required=True, help="the OpenID Connect issuer (Keycloak: SERVER/realms/REALM)")
    p.add_argument("--client-id", default="dagger-portal", help="the portal's client id (default dagger-portal)")
    p.add_argument("--client-secret-file", required=True, metavar="FILE", help="the client's secret (mode 0600)")
    p.add_argument("--session-key-file", required=True, metavar="FILE",
                   help="the key signing the session cookies (mode 0600); made if missing")
    p.add_argument("--registry", metavar="URL", help="the registry database, or @FILE (as for dagger status)")
    p.add_argument("--clusters", metavar="DIR", help="the directory of cluster definitions (as for dagger status)")
    p.add_argument("--listen", default="127.0.0.1:8080", metavar="HOST:PORT",
                   help="the address to serve on (default 127.0.0.1:8080)")
    p.add_argument("--threads", type=int, default=DEFAULT_THREADS, help=f"worker threads (default {DEFAULT_THREADS})")
    return p


def _session_key(path: Path) -> None:
    """A new random key, 0600, if the file does not exist yet."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "x", opener=lambda p, flags: os.open(p, flags, 0o600)) as f:
            f.write(secrets.token_urlsafe(48) + "\n")


def main(args) -> int:
    import waitress

    from dagger_runtime.lifecycle.registry import Registry, resolve_url

    from .app import create_app
    from .config import PortalConfig

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    _session_key(Path(args.session_key_file))
    config = PortalConfig.load(url=args.url, issuer=args.issuer, client_id=args.client_id,
                               client_secret_file=args.client_secret_file, session_key_file=args.session_key_file,
                               registry_url=resolve_url(args.registry), clusters_dir=args.clusters)
    app = create_app(config, registry=Registry(config.registry_url))
    host, _, port = args.listen.rpartition(":")
    logging.getLogger("portal").info("serving %s on %s", config.url, args.listen)
    waitress.serve(app, host=host, port=int(port), threads=args.threads, ident="daggers-portal")
    return 0
