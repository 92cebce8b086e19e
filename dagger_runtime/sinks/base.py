"""What every sink shares: the interface, result rows as Python values, and retries with back-off."""

from __future__ import annotations

import datetime as dt
import logging
import random
import time
from dataclasses import dataclass, field

from ..errors import DaggerError

log = logging.getLogger(__name__)

WINDOW_COLUMN = "window_timestamp"  # raystack/dagger's name for the time of a result row
TAG_PREFIXES = ("tag_", "label_")  # raystack/dagger's tag columns


def window_and_tags(names: list[str]) -> list[str]:
    """The columns that identify a result row: its window and its tags. Sinks key by them, so a
    replayed window overwrites itself."""
    return [n for n in names if n == WINDOW_COLUMN or n.startswith(TAG_PREFIXES)]


class SinkError(DaggerError):
    """The sink refused or could not take a batch, after every retry."""


@dataclass
class SinkStats:
    rows: int = 0
    batches: int = 0
    errors: int = 0  # failed attempts
    retries: int = 0


class Sink:
    """One micro-batch at a time: write(dataframe, batch_id) returns only when all of it is stored."""

    kind = "?"
    permanent: tuple = ()  # error types meaning "the sink refuses this data": never retried
    # True when write() runs exactly one Spark action on the batch (its retries are of what it
    # collected): the batch is then not cached first (query.BatchWriter), which only costs time
    reads_batch_once = False

    def __init__(self, plan, columns: list[dict], *, retry_for_s: float = 600.0, out=None):
        self.plan = plan
        self.job = plan.job
        self.columns = columns
        self.retry_for_s = retry_for_s
        self.out = out
        self.stats = SinkStats()

    @classmethod
    def check(cls, plan, columns: list[dict]) -> None:
        """Raise DaggerError when the output columns cannot go to this sink (before anything runs)."""

    def describe(self) -> str:
        return self.kind

    def write(self, dataframe, batch_id: int) -> int:
        raise NotImplementedError

    def close(self) -> None:
        pass

    def _retry(self, what: str, attempt):
        return retrying(
            attempt,
            what=f"{self.kind} sink: {what}",
            stats=self.stats,
            give_up_after_s=self.retry_for_s,
            permanent=self.permanent,
        )


def retrying(
    attempt,
    *,
    what: str,
    stats: SinkStats | None = None,
    give_up_after_s: float = 600.0,
    first_delay_s: float = 0.5,
    max_delay_s: float = 30.0,
    permanent=(),
):
    """Call attempt() until it succeeds; on an error wait (exponential back-off with jitter,
    capped) and try again, for at most give_up_after_s. Errors of the `permanent` types are not
    retried: a sink that refuses the data will refuse it again."""
    started = time.monotonic()
    delay = first_delay_s
    tries = 0
    while True:
        try:
            return attempt()
        except permanent:
            if stats:
                stats.errors += 1
            raise
        except Exception as e:  # noqa: BLE001 - any failure to reach the sink is retried
            tries += 1
            if stats:
                stats.errors += 1
            elapsed = time.monotonic() - started
            if elapsed + delay > give_up_after_s:
                raise SinkError(
                    f"{what}: failed {tries} times over {elapsed:.0f}s; last error: {type(e).__name__}: {e}"
                ) from e
            log.warning("%s: %s: %s; retry %d in %.1fs", what, type(e).__name__, e, tries, delay)
            if stats:
                stats.retries += 1
            time.sleep(delay * random.uniform(0.8, 1.2))
            delay = min(delay * 2, max_delay_s)


@dataclass(frozen=True)
class ResultRows:
    """A batch's rows as Python values: timestamps as aware UTC datetimes."""

    names: list[str]
    rows: list[tuple] = field(default_factory=list)


def collect(dataframe) -> ResultRows:
    """The rows of a (small) batch of results. Timestamps travel as epoch microseconds and become
    aware UTC datetimes here, so the Python process's time zone never shifts them."""

    from pyspark.sql import functions as F
    from pyspark.sql.types import TimestampNTZType, TimestampType

    stamps = {f.name for f in dataframe.schema.fields if isinstance(f.dataType, (TimestampType, TimestampNTZType))}
    selected = dataframe.select(
        *[
            F.unix_micros(F.col(f"`{n}`").cast("timestamp")).alias(n) if n in stamps else F.col(f"`{n}`")
            for n in dataframe.columns
        ]
    )
    epoch = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
    names = dataframe.columns
    rows = []
    for row in selected.collect():
        rows.append(
            tuple(
                epoch + dt.timedelta(microseconds=v) if n in stamps and v is not None else v for n, v in zip(names, row)
            )
        )
    return ResultRows(names, rows)
