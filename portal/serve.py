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

import waitress

from . import team_secrets
from .config import PortalConfig

DEFAULT_THREADS = 32  # checks wait their turn for the one warm Spark: pages must not wait behind them


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "portal",
        help="serve the web portal (sign-in through OpenID Connect)",
        description="Serve the web portal: analysts sign in through the platform's OpenID Connect "
        "provider and see, create and change their team's daggers.",
    )
    p.add_argument("--url", required=True, help="where users reach the portal (its redirect URI is URL/auth/callback)")
    p.add_argument("--issuer", required=True, help="the OpenID Connect issuer (Keycloak: SERVER/realms/REALM)")
    p.add_argument("--client-id", default="dagger-portal", help="the portal's client id (default dagger-portal)")
    p.add_argument("--client-secret-file", required=True, metavar="FILE", help="the client's secret (mode 0600)")
    p.add_argument(
        "--session-key-file",
        required=True,
        metavar="FILE",
        help="the key signing the session cookies (mode 0600); made if missing",
    )
    p.add_argument("--registry", metavar="URL", help="the registry database, or @FILE (as for dagger status)")
    p.add_argument("--clusters", metavar="DIR", help="the directory of cluster definitions (as for dagger status)")
    p.add_argument(
        "--kafka",
        metavar="HOST:PORT[,...]",
        help="the Kafka bootstrap servers of the catalogue's topics, for daggers created in the portal "
        "(without it the portal shows and changes daggers but creates none)",
    )
    p.add_argument("--influx", metavar="URL", help="InfluxDB, for new daggers' influx sinks (the team's own database)")
    p.add_argument("--postgres", metavar="HOST:PORT", help="PostgreSQL, for new daggers' postgres sinks")
    p.add_argument("--prometheus", metavar="URL", help="the platform's Prometheus, for the daggers' charts and alerts")
    p.add_argument("--prometheus-user", metavar="USER", help="its login (basic auth)")
    p.add_argument("--prometheus-password-file", metavar="FILE", help="its password (mode 0600)")
    p.add_argument(
        "--team-secrets",
        metavar="DIR",
        help="a folder (0700) of the teams' secrets new daggers are deployed and previewed with: one "
        "file (0600) per variable, named DAGGER_SECRET_<TEAM>__<NAME>",
    )
    p.add_argument(
        "--no-workbench",
        action="store_true",
        help="start no Spark for validating drafts (creating daggers is then refused)",
    )
    p.add_argument(
        "--listen",
        default="127.0.0.1:8080",
        metavar="HOST:PORT",
        help="the address to serve on (default 127.0.0.1:8080)",
    )
    p.add_argument("--threads", type=int, default=DEFAULT_THREADS, help=f"worker threads (default {DEFAULT_THREADS})")
    return p


def _session_key(path: Path) -> None:
    """A new random key, 0600, if the file does not exist yet."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "x", opener=lambda p, flags: os.open(p, flags, 0o600)) as f:
            f.write(secrets.token_urlsafe(48) + "\n")


def main(args) -> int:

    from dagger_runtime.lifecycle.registry import Registry, resolve_url

    from .app import create_app

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    _session_key(Path(args.session_key_file))
    config = PortalConfig.load(
        url=args.url,
        issuer=args.issuer,
        client_id=args.client_id,
        client_secret_file=args.client_secret_file,
        session_key_file=args.session_key_file,
        registry_url=resolve_url(args.registry),
        clusters_dir=args.clusters,
        kafka=args.kafka,
        influx_url=args.influx,
        postgres=args.postgres,
        prometheus_url=args.prometheus,
        prometheus_user=args.prometheus_user,
        prometheus_password_file=args.prometheus_password_file,
    )
    bench = None
    if config.kafka and not args.no_workbench:
        from .workbench import Workbench

        bench = Workbench().start()
    # after the workbench's JVM is launched: neither it nor its Python workers hold the secrets
    if args.team_secrets:
        names = team_secrets.load(args.team_secrets)
        logging.getLogger("portal").info("holding %d team secrets", len(names))
    app = create_app(config, registry=Registry(config.registry_url), workbench=bench)
    host, _, port = args.listen.rpartition(":")
    logging.getLogger("portal").info("serving %s on %s", config.url, args.listen)
    waitress.serve(app, host=host, port=int(port), threads=args.threads, ident="daggers-portal")
    return 0
