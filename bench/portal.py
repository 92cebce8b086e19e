"""`python -m bench.portal`: the portal on the lab under 50 signed-in analysts (locust).

Each user signs in through the lab's Keycloak as its team's analyst (the two teams alternate),
then browses as an analyst does (the daggers page, its live refresh, a dagger's page, the new
dagger's page) and now and then checks a draft query (`POST /api/drafts/validate`, the portal's
warm Spark). A load shape of locust's ramps to --users and holds them. Targets (issue 24): page
p95 under 300 ms, validate p95 under 2 s; the verdict and every request's percentiles are printed
and written to bench/results/portal.json.
"""

from __future__ import annotations

# locust patches the process with gevent: before anything opens a socket
from locust import HttpUser, LoadTestShape, between, task  # isort: skip
from locust.env import Environment  # isort: skip

import argparse
import itertools
import json
import os
import random
import re
import sys
import time
from pathlib import Path

import gevent
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from lab import access
from lab.oidc_browser import browser, submit_login

REPO = Path(__file__).resolve().parent.parent
TEAMS = ("allocations", "api-health")
PAGE_P95_MS, VALIDATE_P95_MS = 300, 2000
PAGES = ("/daggers", "/api/daggers", "/daggers/[name]", "/daggers/new")
QUERY = (
    "SELECT COUNT(1) AS n, TUMBLE_END(rowtime, INTERVAL '60' SECOND) AS window_timestamp\n"
    "FROM `data_stream` WHERE {n} > 0\nGROUP BY TUMBLE(rowtime, INTERVAL '60' SECOND)"
)
_settings: dict = {}
_teams = itertools.cycle(TEAMS)


def sign_in(portal: str, lab: Path, team: str) -> tuple[str, str]:
    """The portal's session cookie (name=value) of the team's analyst, signed in as a browser does,
    and the new dagger's page (whose CSRF token that session holds)."""
    user = access.analyst(team)
    s = browser()
    start = s.get(f"{portal}/auth/login", allow_redirects=False, timeout=60)
    page = s.get(start.headers["Location"], timeout=60)
    back = submit_login(s, page, user, access.sign_in_password(user, lab))
    landed = s.get(back.headers["Location"], allow_redirects=False, timeout=60)
    if landed.status_code != 302:
        raise RuntimeError(f"{user} was not signed in: {landed.status_code}")
    # the session's CSRF token is made with the first page that shows it: the cookie after that one
    page = s.get(f"{portal}/daggers/new", timeout=60).text
    cookie = next(c for c in s.cookies if c.name.startswith("__Host-"))
    return f"{cookie.name}={cookie.value}", page


class Analyst(HttpUser):
    wait_time = between(1, 3)

    def on_start(self):
        self.team = next(_teams)
        # the portal's cookie is Secure (__Host-): sent by hand, as a browser sends it to loopback
        self.client.headers["Cookie"], page = sign_in(self.host, _settings["lab"], self.team)
        self.token = re.search(r'id="csrf" value="([^"]+)"', page).group(1)
        chosen = re.search(r'name="input" value="([^"]+)"[^>]*checked\s+data-prefix="([^"]*)"', page)
        self.input, prefix = chosen.group(1), chosen.group(2)
        self.suffix = "bench" if prefix else None
        daggers = self.client.get("/api/daggers", name="/api/daggers").json()["daggers"]
        self.daggers = [d["dagger"] for d in daggers]

    @task(4)
    def daggers_page(self):
        self.client.get("/daggers", name="/daggers")

    @task(4)
    def live_refresh(self):
        self.client.get("/api/daggers", name="/api/daggers")

    @task(2)
    def a_daggers_page(self):
        if self.daggers:
            self.client.get(f"/daggers/{random.choice(self.daggers)}", name="/daggers/[name]")

    @task(1)
    def new_dagger_page(self):
        self.client.get("/daggers/new", name="/daggers/new")

    @task(1)
    def validate(self):
        draft = {
            "team": self.team,
            "name": "bench-draft",
            "input": self.input,
            "query": QUERY.format(n=random.randint(1, 10**6)),
            "watermark_delay": "60s",
            "parallelism": 1,
            "sink": {"type": "log"},
        }
        if self.suffix:
            draft["topic_suffix"] = self.suffix
        with self.client.post(
            "/api/drafts/validate",
            json=draft,
            name="/api/drafts/validate",
            catch_response=True,
            headers={"X-CSRFToken": self.token, "Origin": self.host},
        ) as r:
            if r.status_code != 200 or not r.json().get("valid"):
                r.failure(f"not valid: {r.status_code} {r.text[:200]}")


class RampAndHold(LoadTestShape):
    """Up to the users in ramp_s, then held for hold_s."""

    def __init__(self, users: int, ramp_s: float, hold_s: float):
        super().__init__()
        self.users, self.ramp_s, self.hold_s = users, ramp_s, hold_s

    def tick(self):
        t = self.get_run_time()
        if t > self.ramp_s + self.hold_s:
            return None
        return self.users, max(1.0, self.users / self.ramp_s)


def run(portal: str, lab: Path, users: int, ramp_s: float, hold_s: float) -> dict:
    _settings["lab"] = lab
    env = Environment(user_classes=[Analyst], host=portal, shape_class=RampAndHold(users, ramp_s, hold_s))
    runner = env.create_local_runner()
    runner.start_shape()
    console = Console(stderr=True)
    began, held = time.monotonic(), False
    while runner.shape_greenlet and not runner.shape_greenlet.dead:
        gevent.sleep(1)
        if not held and time.monotonic() - began >= ramp_s:
            # the measure is the hold, every user signed in: the ramp's sign-ins are not page views
            env.stats.reset_all()
            held = True
        if int(time.monotonic() - began) % 5 == 0:
            total = env.stats.total
            console.print(
                f"[bench] {time.monotonic() - began:4.0f} s: {runner.user_count} users, "
                f"{total.num_requests} requests{' since the ramp' if held else ''}, "
                f"{total.num_failures} failed",
                highlight=False,
            )
    runner.quit()
    rows = []
    for (name, method), entry in sorted(env.stats.entries.items()):
        rows.append(
            {
                "name": name,
                "method": method,
                "requests": entry.num_requests,
                "failures": entry.num_failures,
                "p50_ms": round(entry.get_response_time_percentile(0.5)),
                "p95_ms": round(entry.get_response_time_percentile(0.95)),
                "max_ms": round(entry.max_response_time),
            }
        )
    pages = [r for r in rows if r["name"] in PAGES]
    validate = [r for r in rows if r["name"] == "/api/drafts/validate"]
    page_p95 = max((r["p95_ms"] for r in pages), default=None)
    validate_p95 = validate[0]["p95_ms"] if validate else None
    failures = sum(r["failures"] for r in rows)
    met = (
        page_p95 is not None
        and page_p95 < PAGE_P95_MS
        and validate_p95 is not None
        and validate_p95 < VALIDATE_P95_MS
        and failures == 0
    )
    return {
        "users": users,
        "ramp_s": ramp_s,
        "hold_s": hold_s,
        "requests": rows,
        "page_p95_ms": page_p95,
        "validate_p95_ms": validate_p95,
        "failures": failures,
        "targets": {"page_p95_ms": PAGE_P95_MS, "validate_p95_ms": VALIDATE_P95_MS},
        "met": met,
        "cores": os.cpu_count(),
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.portal", description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--lab",
        default=os.environ.get("DAGGER_LAB_DIR", str(REPO / ".lab")),
        help="the lab's folder (default $DAGGER_LAB_DIR, else .lab)",
    )
    p.add_argument(
        "--port-base",
        type=int,
        default=int(os.environ.get("DAGGER_LAB_PORT_BASE", "19000")),
        help="the lab's port base (default $DAGGER_LAB_PORT_BASE, else 19000); the portal is on base + 4080",
    )
    p.add_argument("-u", "--users", type=int, default=50, help="signed-in users (default 50)")
    p.add_argument("--ramp", type=float, default=25.0, metavar="SECONDS", help="to reach them (default 25)")
    p.add_argument("--hold", type=float, default=60.0, metavar="SECONDS", help="then held (default 60)")
    p.add_argument("--out", default=str(REPO / "bench" / "results" / "portal.json"))
    args = p.parse_args(argv)
    portal = f"http://127.0.0.1:{args.port_base + 4080}"
    result = run(portal, Path(args.lab), args.users, args.ramp, args.hold)
    table = Table(title=f"The portal under {args.users} signed-in analysts")
    for column in ("request", "count", "failed", "p50 ms", "p95 ms", "max ms"):
        table.add_column(column, justify="left" if column == "request" else "right")
    for r in result["requests"]:
        table.add_row(
            escape(f"{r['method']} {r['name']}"),
            str(r["requests"]),
            str(r["failures"]),
            str(r["p50_ms"]),
            str(r["p95_ms"]),
            str(r["max_ms"]),
        )
    Console(stderr=True).print(table)
    verdict = (
        f"pages p95 {result['page_p95_ms']} ms (target < {PAGE_P95_MS}), validate p95 "
        f"{result['validate_p95_ms']} ms (target < {VALIDATE_P95_MS}), {result['failures']} failed: "
        + ("met" if result["met"] else "NOT met")
    )
    print(f"[bench] {verdict}", file=sys.stderr)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
