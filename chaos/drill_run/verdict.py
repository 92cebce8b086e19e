"""The sink's windows compared with the same windows computed from the ledger, per dagger, and
each case's figures (RTO, RPO, late messages)."""

from __future__ import annotations

import time

from ..probes import late_letters
from ..verify import compare, expected, read_influx
from .common import (
    FIRST_BATCH_WAIT_S,
    VERIFY_WAIT_S,
    Deployed,
    _watermark_delay_ms,
)


class Verdict:
    """The data verdict, dagger by dagger (a part of DrillRun)."""

    def verify(self) -> list[dict]:
        """Every verify entry's windows: the sink against the ledger, once the fed messages' last
        windows had time to close."""
        for t in self._threads:
            t.join(timeout=FIRST_BATCH_WAIT_S)
        cases = []
        frame = self.ledger.frame() if self.ledger is not None else None
        for v in self.book.verify:
            d = self.deployed.get(v.dagger)
            dep = next(x for x in self.book.deployments if x.name == v.dagger)
            if d is None or frame is None:
                continue
            topics = [t for t in dep.reads]
            fed = frame[frame["topic"].isin(topics)]
            if fed.empty:
                self.notes.append(f"{v.dagger}: nothing was fed to the topics it reads")
                continue
            if d.job["sink"]["type"] != "influx":
                self.notes.append(
                    f"{v.dagger}: its {d.job['sink']['type']} sink is not read back by the runner yet "
                    "(influx is); no data verdict"
                )
                continue
            delay_ms = _watermark_delay_ms(d.spec_path)
            closed_by = int(fed["event_time_ms"].max()) - delay_ms
            since = int(fed["event_time_ms"].min())
            want = expected(fed, v, closed_by_ms=closed_by)
            influx = d.job["sink"]["influx"]
            deadline = time.time() + VERIFY_WAIT_S
            self.event("note", f"verifying {v.dagger}: {len(want)} window(s) expected")
            while True:
                got = read_influx(
                    influx["url"],
                    influx["db_name"],
                    influx["measurement_name"],
                    v,
                    since_ms=since - int(v.window * 1000),
                    until_ms=closed_by,
                    auth=self._influx_login(influx),
                )
                result = compare(want, got, v, since_ms=since - int(v.window * 1000), until_ms=closed_by)
                if (result.windows_missing == 0 and result.windows_wrong == 0) or time.time() > deadline:
                    break
                time.sleep(3.0)
            if result.windows_missing or result.windows_wrong:
                self.explain_late(d, v, fed, closed_by, result)
            cases.append(self.case(v, d, result))
        return cases

    def explain_late(self, d: Deployed, v, fed, closed_by: int, result) -> None:
        """Which of the missing or wrong windows late messages fell in: the dagger set them aside
        on its dead-letter topic (on each Kafka cluster it read), matched to the ledger by key."""
        from ..verify import expected

        keys: set[bytes] = set()
        for name, cluster in self.lab.kafka().items():
            keys |= late_letters(cluster.bootstrap_servers, self.lab.login(cluster=name), d.job["dead_letter_topic"])
        if not keys:
            # none read back: none set aside, or none reachable (unknown, not 0)
            result.windows_late = (
                0 if not (d.job and self.sampler and self.sampler.late_rows(d.playbook_name, "late_messages")) else None
            )
            return
        late = fed[fed["key"].isin(list(keys))]
        result.explain_late(expected(late, v, closed_by_ms=closed_by), v)
        self.event(
            "note",
            f"{v.dagger}: {len(late)} fed message(s) were set aside as late; "
            f"{result.windows_late} of the missing or wrong windows hold some",
        )

    def case(self, v, d: Deployed, result) -> dict:
        fo, trigger = self.book.failover, self.book.failover_fault
        case = {"name": v.dagger, "dagger": d.name, **result.as_case_fields()}
        late = self.sampler.late_rows(d.playbook_name) if self.sampler is not None else None
        if late is not None:
            case["late_rows_dropped"] = late
        late = self.sampler.late_rows(d.playbook_name, "late_messages") if self.sampler is not None else None
        if late is not None:
            case["late_messages"] = late  # set aside to the dead letters, behind the watermark
        if fo is not None and trigger is not None and d in self.affected():
            t_fault = self.fault_times.get(trigger.name)
            case["failover"] = fo.kind
            case["rto_target_seconds"] = fo.rto_target
            if t_fault is not None and d.first_batch_after is not None and d.first_batch_after < t_fault:
                # a batch before the fault was in effect is no recovery from it: not measured, said
                self.notes.append(f"{v.dagger}: its first batch after the failover came before the fault was in effect")
            elif t_fault is not None and d.first_batch_after is not None:
                case["rto_seconds"] = round(d.first_batch_after - t_fault, 2)
                steps = []
                taken = (
                    self.standby_steps(d, t_fault) if {"takeover", "handoff"} & set(d.failover_timings or {}) else None
                )
                if taken is not None:
                    case["rto_seconds"], steps = taken
                    case["standby"] = True
                elif d.failover_started is not None:
                    steps.append({"step": "detect", "seconds": round(max(0.0, d.failover_started - t_fault), 2)})
                if taken is None and d.failover_started is not None and d.failover_done is not None:
                    steps += self.move_steps(d.failover_done - d.failover_started, d.failover_timings)
                if taken is None and d.failover_done is not None:
                    # the driver's start (JVM, Python, Spark session, executors, the query's plan)
                    # and its first batch, as far as the batch's own duration tells them apart
                    batch = min(d.first_batch_seconds or 0.0, d.first_batch_after - d.failover_done)
                    steps.append(
                        {"step": "driver start", "seconds": round(d.first_batch_after - d.failover_done - batch, 2)}
                    )
                    steps.append({"step": "first batch", "seconds": round(batch, 2)})
                case["rto_steps"] = steps
            rpo = self.rpo.get(trigger.name)
            if rpo:
                case["rpo_messages"] = rpo["messages"]
                if rpo["seconds"] is not None:
                    case["rpo_seconds"] = round(rpo["seconds"], 2)
            if fo.fail_back is not None:
                case["fail_back_to"] = trigger.cluster
                if d.fail_back_started is not None and d.fail_back_first_batch is not None:
                    case["fail_back_seconds"] = round(d.fail_back_first_batch - d.fail_back_started, 2)
        lost = case["windows_missing"] or case["windows_wrong"]
        rto_ok = case.get("rto_seconds") is not None or "failover" not in case
        if "rto_seconds" in case and case.get("rto_target_seconds") is not None:
            rto_ok = case["rto_seconds"] <= case["rto_target_seconds"]
        back_ok = "fail_back_to" not in case or "fail_back_seconds" in case
        case["verdict"] = "pass" if not lost and rto_ok and back_ok and not d.failover_error else "fail"
        return case
