"""The Debian packages of the servers the tests and the lab start (InfluxDB 1.x, VictoriaMetrics,
PostgreSQL, Prometheus; and Node.js, which runs the workflow's script in a test; and Chromium, which renders
the drill reports headless in a test), installed with apt-get when missing. `make test` and `make demo` run this first.

    python -m lab.packages          # install what is missing (as root), or say the command
    python -m lab.packages --check  # exit 1 if anything is missing
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import subprocess
import sys

# package -> how to find its server binary
PACKAGES = {
    "influxdb": lambda: shutil.which("influxd"),
    "victoria-metrics": lambda: shutil.which("victoria-metrics"),
    "postgresql": lambda: postgres_bin("postgres"),
    "prometheus": lambda: shutil.which("promtool"),
    # runs the pull-request workflow's github-script verdict in tests/test_infra_pr_flow.py
    "nodejs": lambda: shutil.which("node"),
    # builds the portal's map (portal/web: Leaflet and its basemap from npm, bundled by esbuild)
    "npm": lambda: shutil.which("npm"),
    # renders the drills' HTML reports headless (chaos/browser.py, the browser tests in
    # tests/test_chaos_report.py) and takes the README's screenshot of one
    "chromium": lambda: shutil.which("chromium"),
    # drives chromium from the portal's browser tests (Selenium's WebDriver; the same release as chromium)
    "chromium-driver": lambda: shutil.which("chromedriver"),
    # the network faults (chaos/faults/network.py): nft drops a broker's packets, tc throttles them
    "nftables": lambda: sbin("nft"),
    "iproute2": lambda: sbin("tc"),
}


def sbin(name: str) -> str | None:
    """A tool Debian installs into /usr/sbin, which a non-login PATH may not have."""
    return shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin")


def postgres_bin(name: str) -> str | None:
    """A PostgreSQL server program (initdb, postgres, pg_ctl): Debian keeps them out of PATH."""
    found = shutil.which(name)
    if found and name != "postgres":
        return found
    candidates = sorted(
        glob.glob(f"/usr/lib/postgresql/*/bin/{name}"),
        key=lambda p: int(p.split("/")[4]) if p.split("/")[4].isdigit() else 0,
    )
    return candidates[-1] if candidates else found


def missing() -> list[str]:
    return [package for package, find in PACKAGES.items() if not find()]


def install(packages: list[str]) -> None:
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    print(f">> installing Debian packages: {' '.join(packages)}", flush=True)
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
    # the servers are started by the project itself, never as system services
    subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", *packages], check=True, env=env)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m lab.packages", description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="only say what is missing; exit 1 if anything is")
    args = p.parse_args(argv)
    need = missing()
    if not need:
        return 0
    command = f"apt-get install -y {' '.join(need)}"
    if args.check:
        print(f"missing Debian packages: {', '.join(need)} (install: {command})", file=sys.stderr)
        return 1
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        print(f"missing Debian packages: {', '.join(need)}; run as root: sudo {command}", file=sys.stderr)
        return 1
    install(need)
    still = missing()
    if still:
        print(f"still missing after apt-get: {', '.join(still)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
