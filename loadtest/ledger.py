"""Every message a load run sent, accounted for: where Kafka put it, or why it was not written.

A Ledger row per acknowledged message: generator index, topic, partition, offset, Kafka timestamp
(ms), key, event time (ms) and the chosen fact fields (dotted paths of the generator's facts); a
row per failed send with its error instead of a place in Kafka. From the rows, exact expected
aggregates per tumbling window, the numbers a drill compares with what a dagger wrote to its sink:

    ledger.expected_windows(60_000, keys=["service_type"],
                            measures={"n": ("count", None), "fare": ("sum", "total_fare")},
                            where={"status": "COMPLETED"})

Appends are thread-safe: kafka-python runs delivery callbacks on its IO thread.

Saved as Parquet (pyarrow): typed columns keep int64 offsets and millisecond times exact, keys
as binary without an encoding step, and float facts bit for bit, so aggregates recomputed from a
saved ledger are the ones computed live; pandas reads it in one call and the drill's ledgers of
millions of rows stay small. JSON lines would need base64 keys and lose float and int64 typing.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from pathlib import Path
from typing import Any, Iterable, Mapping

from .generator import fact

__all__ = ["Ledger", "COLUMNS", "AGGREGATES"]

# the fixed columns; fact columns follow, named by their dotted path
COLUMNS = ("index", "topic", "partition", "offset", "timestamp_ms", "key", "event_time_ms", "error")
AGGREGATES = ("count", "sum", "min", "max", "mean", "nunique")
_META_KEY = b"daggers.loadtest.ledger"
_FORMAT = 1


def _plain(value: Any) -> Any:
    """A fact as one Parquet cell: scalars as they are, lists and maps as sorted JSON text."""
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True, default=lambda b: b.hex() if isinstance(b, bytes) else str(b))
    return value


class Ledger:
    """Acknowledged and failed sends of one load run (one process)."""

    def __init__(self, fields: Iterable[str] = (), meta: Mapping[str, Any] | None = None):
        self.fields = list(dict.fromkeys(fields))  # ordered, without repeats
        clash = [f for f in self.fields if f in COLUMNS]
        if clash:
            raise ValueError(
                f"fact field {clash[0]!r} has the name of a ledger column ({', '.join(COLUMNS)}); "
                "a ledger cannot keep it under that name"
            )
        self.meta = dict(meta or {})
        self._lock = threading.Lock()
        self._cols: dict[str, list] = {c: [] for c in (*COLUMNS, *self.fields)}
        self._partitions: Counter = Counter()  # kept as rows come: progress lines read it often
        self._failed = 0

    # -------------------------------------------------------------- appends

    def record(
        self,
        *,
        index: int | None,
        topic: str,
        partition: int,
        offset: int,
        timestamp_ms: int | None,
        key: bytes | None,
        event_time_ms: int | None,
        facts: Mapping | None = None,
    ) -> None:
        """One message Kafka acknowledged."""
        self._append(index, topic, partition, offset, timestamp_ms, key, event_time_ms, None, facts)

    def record_failure(
        self,
        *,
        index: int | None,
        topic: str,
        key: bytes | None,
        event_time_ms: int | None,
        error: BaseException | str,
        facts: Mapping | None = None,
    ) -> None:
        """One message that was not written, and why (never dropped without a trace)."""
        text = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
        self._append(index, topic, None, None, None, key, event_time_ms, text or "unknown error", facts)

    def _append(self, *row_and_facts) -> None:
        *row, facts = row_and_facts
        values = [fact(facts, f) if facts else None for f in self.fields]
        with self._lock:
            cols = self._cols
            for name, v in zip(COLUMNS, row):
                cols[name].append(v)
            for name, v in zip(self.fields, values):
                cols[name].append(_plain(v))
            if row[-1] is None:
                self._partitions[(row[1], row[2])] += 1
            else:
                self._failed += 1

    # --------------------------------------------------------------- counts

    @property
    def acked(self) -> int:
        with self._lock:
            return self._partitions.total()

    @property
    def failed(self) -> int:
        with self._lock:
            return self._failed

    def __len__(self) -> int:
        with self._lock:
            return len(self._cols["error"])

    def counts_by_topic(self) -> dict[str, int]:
        """Acknowledged messages per topic."""
        out: Counter = Counter()
        with self._lock:
            for (topic, _), n in self._partitions.items():
                out[topic] += n
        return dict(out)

    def counts_by_partition(self) -> dict[tuple[str, int], int]:
        """Acknowledged messages per (topic, partition)."""
        with self._lock:
            return dict(self._partitions)

    @property
    def failures(self) -> list[dict]:
        """index, topic, key, event_time_ms and error of every failed send."""
        with self._lock:
            c = self._cols
            return [
                {
                    "index": c["index"][i],
                    "topic": c["topic"][i],
                    "key": c["key"][i],
                    "event_time_ms": c["event_time_ms"][i],
                    "error": e,
                }
                for i, e in enumerate(c["error"])
                if e is not None
            ]

    # ---------------------------------------------------------------- frames

    def _table(self):
        import pyarrow as pa

        with self._lock:
            cols = {k: list(v) for k, v in self._cols.items()}
        types = {
            "index": pa.int64(),
            "topic": pa.string(),
            "partition": pa.int32(),
            "offset": pa.int64(),
            "timestamp_ms": pa.int64(),
            "key": pa.binary(),
            "event_time_ms": pa.int64(),
            "error": pa.string(),
        }
        arrays = {name: pa.array(values, type=types.get(name)) for name, values in cols.items()}
        meta = {"format": _FORMAT, "fields": self.fields, "meta": self.meta}
        return pa.table(arrays).replace_schema_metadata({_META_KEY: json.dumps(meta, default=str).encode()})

    def frame(self, *, failures: bool = False):
        """The rows as a pandas DataFrame: acknowledged ones (or, with failures=True, every one)."""
        df = self._table().to_pandas()
        if not failures:
            df = df[df["error"].isna()].reset_index(drop=True)
        return df

    def expected_windows(
        self,
        size_ms: int,
        keys: Iterable[str] = (),
        measures: Mapping[str, tuple[str, str | None]] | None = None,
        *,
        time: str = "event",
        where: Mapping[str, Any] | None = None,
    ):
        """Exact aggregates per tumbling window of `size_ms` and key, from the acknowledged rows.

        keys: fact paths kept by this ledger (or ledger columns: topic, partition, key).
        measures: output column -> (aggregate, fact path); aggregates: count (None: rows; a path:
        its non-null values), sum, min, max, mean, nunique.
        time: "event" (the event time, as a dagger's rowtime) or "kafka" (Kafka's timestamp).
        where: fact path -> a value or a list of values the row must have (before windowing).
        Columns: window_start, window_end (UTC timestamps), the keys, the measures; sorted.
        """
        import pandas as pd

        if isinstance(size_ms, bool) or not isinstance(size_ms, int) or size_ms <= 0:
            raise ValueError(f"window size must be a positive number of milliseconds, not {size_ms!r}")
        if time not in ("event", "kafka"):
            raise ValueError(f"time must be 'event' or 'kafka', not {time!r}")
        keys = list(keys)
        measures = dict(measures or {"count": ("count", None)})
        known = set(self.fields) | {"topic", "partition", "key"}
        for path in [*keys, *(where or {})]:
            if path not in known:
                raise ValueError(
                    f"{path!r} is not kept by this ledger (it keeps {', '.join(self.fields) or 'no facts'}"
                    f" and topic, partition, key); name it in the ledger's fields"
                )
        for name, spec in measures.items():
            if not (isinstance(spec, tuple) and len(spec) == 2 and spec[0] in AGGREGATES):
                raise ValueError(
                    f"measure {name!r}: want (aggregate, fact path) with aggregate one of "
                    f"{', '.join(AGGREGATES)}, not {spec!r}"
                )
            how, path = spec
            if path is None and how != "count":
                raise ValueError(f"measure {name!r}: {how} needs a fact path")
            if path is not None and path not in known:
                raise ValueError(
                    f"measure {name!r}: {path!r} is not kept by this ledger "
                    f"(it keeps {', '.join(self.fields) or 'no facts'})"
                )
        df = self.frame()
        for path, want in (where or {}).items():
            wanted = list(want) if isinstance(want, (list, tuple, set, frozenset)) else [want]
            df = df[df[path].isin(wanted)]
        column = "event_time_ms" if time == "event" else "timestamp_ms"
        df = df[df[column].notna()]
        start = (df[column].astype("int64") // size_ms) * size_ms
        df = df.assign(__start=start)
        out_cols = ["window_start", "window_end", *keys, *measures]
        if df.empty:
            return pd.DataFrame({c: [] for c in out_cols})
        groups = df.groupby(["__start", *keys], sort=True, dropna=False)
        parts = {}
        for name, (how, path) in measures.items():
            if how == "count" and path is None:
                parts[name] = groups.size()
            else:
                parts[name] = getattr(groups[path], how)()
        out = pd.DataFrame(parts).reset_index()
        out.insert(0, "window_start", pd.to_datetime(out["__start"], unit="ms", utc=True))
        out.insert(1, "window_end", pd.to_datetime(out["__start"] + size_ms, unit="ms", utc=True))
        return out.drop(columns="__start")[out_cols].reset_index(drop=True)

    # ------------------------------------------------------------- save/load

    def save(self, path: str | Path) -> Path:
        """Write the ledger as Parquet (written to a temporary name, then moved: never half a file)."""
        import pyarrow.parquet as pq

        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        pq.write_table(self._table(), tmp)
        tmp.replace(path)
        return path

    @classmethod
    def load(cls, path: str | Path) -> "Ledger":
        import pyarrow.parquet as pq

        try:
            table = pq.read_table(path)
        except (OSError, ValueError) as e:
            raise ValueError(f"{path} is not a readable ledger (Parquet): {e}") from e
        raw = (table.schema.metadata or {}).get(_META_KEY)
        if raw is None:
            raise ValueError(f"{path} is Parquet but not a loadtest ledger (no {_META_KEY.decode()} metadata)")
        meta = json.loads(raw)
        if meta.get("format") != _FORMAT:
            raise ValueError(f"{path}: ledger format {meta.get('format')} is not {_FORMAT}")
        ledger = cls(meta["fields"], meta=meta.get("meta"))
        columns = table.to_pydict()
        missing = [c for c in ledger._cols if c not in columns]
        if missing:
            raise ValueError(f"{path}: ledger lacks columns {', '.join(missing)}")
        ledger._cols = {c: list(columns[c]) for c in ledger._cols}
        c = ledger._cols
        ledger._partitions = Counter((t, p) for t, p, e in zip(c["topic"], c["partition"], c["error"]) if e is None)
        ledger._failed = sum(1 for e in c["error"] if e is not None)
        return ledger

    def __repr__(self) -> str:
        return f"Ledger({self.acked} acked, {self.failed} failed, facts {self.fields})"
