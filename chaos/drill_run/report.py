"""report.json, its HTML page and the drill history, from what the run recorded."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

from ..probes import evaluate
from ..report_model import dump_report, parse_report
from .common import (
    _git_commit,
    _utc,
    produced_rate,
)


class Report:
    """The run's report (a part of DrillRun)."""

    def write_report(self, cases: list[dict] | None = None) -> Path:
        from .. import history
        from ..report_html import write_html

        cases = cases or []
        ended = time.time()
        t = self.book.timeline
        t0 = self.t0
        phases = {
            "before": (t0 + t.warmup, t0 + t.first_fault),
            "during": (t0 + t.first_fault, t0 + t.last_end),
            "after": (t0 + self.late + t.after, min(ended, t0 + self.late + t.end)),
        }
        hypotheses = evaluate(self.book.steady_state, self.sampler, phases) if self.sampler is not None else []
        faults = []
        for name, made in self.injected.items():
            faults.append(
                {
                    "name": name,
                    "kind": made.kind,
                    "target": made.label,
                    "injected_at": _utc(made.injected_at or made.started_at or self.fault_times[name]),
                    "undone_at": _utc(made.undone_at) if made.undone_at else None,
                    "undo_ok": made.state == "undone" and not made.unhealthy,
                    "error": "; ".join(made.errors + made.unhealthy) or None,
                }
            )
        reasons = []
        if self.abort_reason:
            reasons.append(self.abort_reason)
        for c in cases:
            if c["verdict"] != "pass":
                reasons.append(
                    f"{c['name']}: {c['windows_missing']} window(s) missing, {c['windows_wrong']} wrong"
                    + (
                        f" (the dagger dropped at least {c['late_rows_dropped']} row(s) that came behind "
                        f"its watermark: its watermark delay did not hold the backlog)"
                        if c.get("late_rows_dropped") and c["windows_missing"]
                        else ""
                    )
                    + (
                        f" ({c.get('windows_late', '?')} of them hold messages that came behind its "
                        f"watermark and were set aside to its dead-letter topic as late ({c['late_messages']} "
                        f"in all): its watermark delay did not hold the backlog)"
                        if c.get("late_messages") and (c["windows_missing"] or c["windows_wrong"])
                        else ""
                    )
                    + (
                        f", rto {c['rto_seconds']:g} s over {c['rto_target_seconds']:g} s"
                        if c.get("rto_seconds") is not None
                        and c.get("rto_target_seconds") is not None
                        and c["rto_seconds"] > c["rto_target_seconds"]
                        else ""
                    )
                    + (
                        f", failover: {self.deployed[c['name']].failover_error}"
                        if self.deployed[c["name"]].failover_error
                        else ""
                    )
                    + (
                        ""
                        if c.get("rto_seconds") is not None or not c.get("failover")
                        else ", no first batch after the failover"
                    )
                    + (
                        ""
                        if not c.get("fail_back_to") or c.get("fail_back_seconds") is not None
                        else f", not back on {c['fail_back_to']}: "
                        f"{self.deployed[c['name']].fail_back_error or 'no first batch there'}"
                    )
                )
        reasons += [
            f"hypothesis {h['name']} ({h['phase']}): {'not measured' if h['value'] is None else h['value']}"
            for h in hypotheses
            if h["ok"] is not True
        ]
        if self.sampler is not None:  # in a crash loop once the faults are undone and the daggers moved
            reasons += [
                f"{name}: crash loop: {why}" for name, why in sorted(self.sampler.crash_loops(*phases["after"]).items())
            ]
        reasons += [f"fault {f['name']} not undone: {f['error'] or 'unknown'}" for f in faults if not f["undo_ok"]]
        if not cases and not self.abort_reason:
            reasons.append("no case was verified")
        verdict = "aborted" if self.abort_reason else ("pass" if not reasons else "fail")
        produced = {
            "messages": self.ledger.acked if self.ledger else 0,
            "by_topic": self.ledger.counts_by_topic() if self.ledger else {},
            "failed": self.ledger.failed if self.ledger else 0,
        }
        timeline = self.sampler.timeline() if self.sampler is not None else {}
        if timeline.get("t") and self.ledger is not None:
            timeline["throughput"] = produced_rate(self.ledger.frame(), timeline["t"])
        data = {
            "schema": 1,
            "drill": {
                "name": self.book.name,
                "description": self.book.description,
                "playbook": self.book.source,
                "type": self.book.type or (self.book.faults[0].system if self.book.faults else "none"),
                "blast_radius": self.book.blast_radius or self.book.cluster,
            },
            "run": {
                "id": self.run_id,
                "started_at": _utc(self.started),
                "ended_at": _utc(max(ended, time.time())),
                "host": socket.gethostname(),
                "git_commit": _git_commit(),
                "seed": self.seed,
            },
            "verdict": verdict,
            "verdict_reasons": reasons + self.notes if verdict != "pass" else self.notes,
            "hypotheses": hypotheses,
            "faults": faults,
            "events": self.events,
            "timeline": timeline,
            "cases": cases,
            "produced": produced,
        }
        path = self.dir / "report.json"
        report = parse_report(json.loads(json.dumps(data)), path)
        path.write_text(json.dumps(dump_report(report), indent=1))
        write_html(report, self.dir / "report.html")
        history.append(self.dir.parent, report, path)
        return path
