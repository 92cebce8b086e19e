"""A dagger's rates and lag over time and its alerts, from the platform's Prometheus, for its page.

The series are the monitoring rules' own (monitoring/rules/daggers.rules.yml: one series per
dagger), selected by the dagger's team and name, both checked against their rules before they
reach a PromQL selector. Charts are drawn server-side as SVG polylines (no script, no asset from
anywhere): `polyline` is pure and scales a series into the chart's box.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

from dagger_runtime import http_client
from dagger_runtime.errors import DaggerError

# (key, title, unit, PromQL with {sel} the dagger's label selector)
SERIES = (
    ("input", "messages in", "per s", "dagger:input_messages:rate5m{sel}"),
    ("rows", "rows written", "per s", "sum(rate(dagger_result_rows_written_total{sel}[5m]))"),
    ("lag", "consumer lag", "messages", "dagger:consumer_lag_messages:sum{sel}"),
    ("dead", "dead letters", "per s", "dagger:dead_letters:rate5m{sel}"),
)
WIDTH, HEIGHT = 480, 120
HOURS = 1
STEP_S = 30
TIMEOUT_S = 5.0
_LABEL_VALUE = re.compile(r"[A-Za-z0-9._-]{1,128}")  # team and dagger names: nothing PromQL would read


@dataclass(frozen=True)
class Chart:
    key: str
    title: str
    unit: str
    points: str  # the SVG polyline's points, in the WIDTH x HEIGHT box
    low: float | None
    high: float | None
    last: float | None


def selector(team: str, dagger: str) -> str:
    for what, value in (("team", team), ("dagger", dagger)):
        if not isinstance(value, str) or not _LABEL_VALUE.fullmatch(value):
            raise DaggerError(f"not a {what} name a chart can select: {value!a}")
    # no job: the recording rules sum by (team, cluster, dagger), which drops it
    return f'{{team="{team}",dagger="{dagger}"}}'


def polyline(
    samples: list[tuple[float, float]], start: float, end: float, width: int = WIDTH, height: int = HEIGHT
) -> str:
    """The samples (time, value) as SVG points: time from `start` to `end` across the width, values
    from 0 (or the lowest, if below 0) to the highest up the height (SVG's y grows downwards)."""
    if not samples or end <= start:
        return ""
    values = [v for _, v in samples]
    low, high = min(0.0, min(values)), max(values)
    span = high - low or 1.0
    out = []
    for t, v in samples:
        x = (t - start) / (end - start) * width
        y = height - (v - low) / span * height
        out.append(f"{x:.1f},{y:.1f}")
    return " ".join(out)


class Prometheus:
    def __init__(self, url: str, user: str | None = None, password: str | None = None, timeout_s: float = TIMEOUT_S):
        self.url, self.timeout_s = url.rstrip("/"), timeout_s
        # one session for the portal's life (kept-alive connections); no proxy from the
        # environment sees the platform's login
        self.session = http_client.session((user, password or "") if user else None)

    def _get(self, path: str, params: dict | None = None) -> dict:
        try:
            response = self.session.get(f"{self.url}{path}", params=params, timeout=self.timeout_s)
            response.raise_for_status()
            body = response.json()
        except (http_client.Error, ValueError) as e:
            raise DaggerError(f"Prometheus did not answer: {type(e).__name__}") from None
        if body.get("status") != "success":
            raise DaggerError(f"Prometheus refused the query: {body.get('error', 'no reason given')}")
        return body["data"]

    def range(self, query: str, start: float, end: float, step_s: int = STEP_S) -> list[tuple[float, float]]:
        """The one series `query` yields (summed when several), as (time, value) samples."""
        data = self._get("/api/v1/query_range", {"query": query, "start": start, "end": end, "step": step_s})
        summed: dict[float, float] = {}
        for series in data.get("result", []):
            for t, v in series.get("values", []):
                value = float(v)
                if value == value:  # NaN: no sample worth drawing
                    summed[float(t)] = summed.get(float(t), 0.0) + value
        return sorted(summed.items())

    def alerts(self) -> list[dict]:
        return self._get("/api/v1/alerts").get("alerts", [])


def dagger_charts(prom: Prometheus, team: str, dagger: str, now: float | None = None) -> list[Chart]:
    end = time.time() if now is None else now
    start = end - HOURS * 3600
    sel = selector(team, dagger)
    charts = []
    for key, title, unit, template in SERIES:
        samples = prom.range(template.format(sel=sel), start, end)
        values = [v for _, v in samples]
        charts.append(
            Chart(
                key,
                title,
                unit,
                polyline(samples, start, end),
                min(values) if values else None,
                max(values) if values else None,
                values[-1] if values else None,
            )
        )
    return charts


def dagger_alerts(prom: Prometheus, team: str, dagger: str) -> list[dict]:
    """The dagger's alerts pending or firing: name, state, since, summary."""
    selector(team, dagger)
    out = []
    for alert in prom.alerts():
        labels = alert.get("labels", {})
        if labels.get("dagger") == dagger and labels.get("team") == team:
            out.append(
                {
                    "name": labels.get("alertname", "?"),
                    "state": alert.get("state", "?"),
                    "since": alert.get("activeAt", ""),
                    "summary": alert.get("annotations", {}).get("summary", ""),
                }
            )
    return sorted(out, key=lambda a: (a["state"] != "firing", a["name"]))
