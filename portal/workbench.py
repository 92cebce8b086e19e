"""The portal's warm Spark: `validate`'s and `preview`'s own code on a draft, in the portal's
process, one at a time.

A local Spark starts with the portal (its JVM launched before the teams' secrets are in the
process's environment, so neither it nor its Python workers ever hold them), then warms up in the
background (the analyser, the decoder and the UDFs loaded by validating an example) so the first
analyst does not wait for it. Each check runs in a new session of it (its own temporary views and
UDFs: one draft never sees another's tables) and under a time limit: past it, its Spark jobs are
cancelled. A query that kills the JVM ends the portal's process, which its supervisor starts again
with a fresh one (nothing half-dead keeps answering). The checks are the CLI's (dagger_runtime:
load, plan, analyze, check_sink, run_preview) and the refusal the same data as `dagger validate
--json`'s.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import tempfile
import threading
import time
from pathlib import Path

import yaml

from dagger_runtime.errors import DaggerError
from dagger_runtime.session import build_session, sessions_of

from .drafts import spec_text
from .latest import delimited

log = logging.getLogger("portal.workbench")
EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "daggers" / "completed_bookings_by_s2.yaml"
START_TIMEOUT_S = 180.0
CHECK_TIMEOUT_S = 60.0  # a validate or a preview, then its Spark jobs are cancelled
WARM_UP_CHECKS = 40  # validations of the example after the start (about 15 s of one core)
EXIT_JVM_LOST = 70  # the process's exit status when its Spark died (EX_SOFTWARE)


class Workbench:
    def __init__(self, spark=None, *, timeout_s: float = CHECK_TIMEOUT_S) -> None:
        """`spark`: a session to use (the tests'), ready at once; otherwise start() makes one."""
        self._spark, self._own = spark, spark is None
        self._failed: str | None = None
        self._ready = threading.Event()
        self.timeout_s = timeout_s
        if spark is not None:
            self._ready.set()
        self._lock = threading.Lock()  # one at a time: the sessions share one Spark and its active session

    def start(self) -> Workbench:
        """Launch the JVM now (the caller adds secrets to the environment only after this returns),
        warm it up in the background."""
        began = time.monotonic()
        try:
            # its RPC and block manager listen on loopback, where other local users are: they want
            # the secret Spark generates for a local master
            self._spark = build_session("dagger-portal", parallelism=2, extra_conf={"spark.authenticate": "true"})
        except Exception as e:  # noqa: BLE001 - the portal serves on; validate says why it cannot
            self._failed = f"{type(e).__name__}: {e}"
            log.error("the workbench's Spark did not start: %s", self._failed)
            self._ready.set()
            return self
        threading.Thread(target=self._warm_up, args=(began,), name="workbench-warm-up", daemon=True).start()
        return self

    def _warm_up(self, began: float) -> None:
        example = yaml.safe_load(EXAMPLE.read_text())
        try:
            with contextlib.suppress(DaggerError):
                self.validate(example, started=False)
            log.info("the workbench's Spark is ready in %.1f s", time.monotonic() - began)
        finally:
            self._ready.set()
        # then until the JIT has compiled the analyser's hot paths, between the analysts' checks:
        # a fresh JVM's checks take three times as long (bench.portal: validate p95 3.4 s, then 1.3 s)
        for _ in range(WARM_UP_CHECKS):
            with contextlib.suppress(DaggerError):
                self.validate(example)

    def stop(self) -> None:
        if self._own and self._spark is not None:
            self._spark.stop()

    @contextlib.contextmanager
    def exclusive(self):
        """The workbench's Spark to one caller: a deploy or an edit checks the spec on it too
        (dagger_runtime's load_spec), which must not run beside a check."""
        self._wait_ready()
        with self._lock, sessions_of(self._spark):
            yield

    @contextlib.contextmanager
    def _limited(self, what: str):
        """Cancel the Spark jobs of a check that runs past the time limit; end the process if the
        check killed the JVM."""
        context = self._spark.sparkContext
        done = threading.Event()

        def cancel_past_limit() -> None:
            # again and again once past the limit: a job submitted after a cancel is cancelled too
            if not done.wait(self.timeout_s):
                while not done.wait(0.5):
                    context.cancelAllJobs()

        timer = threading.Thread(target=cancel_past_limit, name="workbench-limit", daemon=True)
        timer.start()
        began = time.monotonic()
        try:
            yield
        except DaggerError:
            raise
        except Exception as e:  # noqa: BLE001 - a cancelled job or a dead JVM: said plainly
            if not self._alive():
                self._end_process()
                raise DaggerError("the portal's Spark stopped during the check; it is starting again") from None
            if time.monotonic() - began >= self.timeout_s:
                raise DaggerError(f"the {what} ran longer than {self.timeout_s:.0f} s and was stopped") from None
            raise DaggerError(f"the {what} failed: {type(e).__name__}") from None
        finally:
            done.set()
            timer.join()  # no cancel of its may reach the next check's jobs

    def _alive(self) -> bool:
        try:
            return not self._spark.sparkContext._jsc.sc().isStopped()
        except Exception:  # noqa: BLE001 - py4j says a dead JVM in several ways
            return False

    def _end_process(self) -> None:
        if not self._own:
            return
        log.error("the workbench's Spark is gone: the portal stops so that its supervisor starts it again")
        # after this answer has gone out
        threading.Timer(1.0, os._exit, args=(EXIT_JVM_LOST,)).start()

    def validate(self, job: dict, *, started: bool = True) -> dict:
        """`dagger validate --json`'s answer for the job mapping: {"valid": True, "columns": [...],
        "warnings": [...]} or {"valid": False, "errors": [{kind, message, line?, column?}]}."""
        from dagger_runtime.cli import error_items
        from dagger_runtime.session import build_session, sessions_of
        from dagger_runtime.sinks import check_sink
        from dagger_runtime.validate import analyze

        self._wait_ready(started)
        try:
            plan, warnings = _plan(job)
            with self._lock, sessions_of(self._spark), self._limited("check"):
                columns = analyze(plan, build_session("validate"))
                check_sink(plan, columns)
        except DaggerError as e:
            return {"valid": False, "errors": error_items(e)}
        return {"valid": True, "columns": columns, "warnings": warnings, "spark_sql": plan.query.spark_sql}

    def _wait_ready(self, started: bool = True) -> None:
        if started and not self._ready.wait(START_TIMEOUT_S):
            raise DaggerError("the portal's Spark is still starting; try again in a minute")
        if self._spark is None:
            raise DaggerError(f"the portal's Spark did not start ({self._failed})")

    def preview(self, job: dict, values: list[bytes], *, shown: int = 100) -> dict:
        """`dagger preview`'s answer for the job over `values` (its stream's latest messages):
        {"valid": True, "rows": [...], "read": n, "skipped": n} or validate's refusal."""
        from dagger_runtime.cli import error_items
        from dagger_runtime.preview import run_preview
        from dagger_runtime.session import build_session, sessions_of

        self._wait_ready()
        with tempfile.TemporaryDirectory(prefix="dagger-portal-preview-") as folder:
            path = Path(folder) / "latest.bin"
            path.write_bytes(delimited(values))
            try:
                plan, _ = _plan(job)
                with self._lock, sessions_of(self._spark), self._limited("preview"):
                    report = run_preview(
                        plan, {plan.streams[0].table: str(path)}, spark=build_session("preview"), log=io.StringIO()
                    )
            except DaggerError as e:
                return {"valid": False, "errors": error_items(e)}
        table = plan.streams[0].table
        return {
            "valid": True,
            "rows": report.rows[:shown],
            "row_count": len(report.rows),
            "read": report.read.get(table, 0),
            "skipped": len(report.rejected.get(table, [])),
        }


def _plan(job: dict):
    """The job mapping loaded and planned as `dagger validate` loads a file; (plan, warnings)."""
    from dagger_runtime.config.loader import loads_job, secret_references
    from dagger_runtime.plan import plan_job

    text = spec_text(job)
    # nothing connects while checking: the secrets' references stand for values never read
    env = {name: "not-read-here" for name in secret_references(text, "yaml")}
    spec = loads_job(text, fmt="yaml", source=f"{job.get('name', 'draft')}.yaml", env=env)
    plan = plan_job(spec)
    return plan, list(spec.warnings) + plan.warnings()
