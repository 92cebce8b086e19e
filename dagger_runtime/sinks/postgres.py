"""`postgres`: result rows upserted into a table, keyed by the window and the tag/label columns
(or the job's key_columns), so a replayed batch overwrites its rows. The table is created from the
query's output columns when it does not exist."""

from __future__ import annotations

import base64
import json
import re

from ..errors import DaggerError
from .base import Sink, collect, window_and_tags

_SIMPLE = {
    "string": "TEXT",
    "int": "INTEGER",
    "bigint": "BIGINT",
    "smallint": "SMALLINT",
    "tinyint": "SMALLINT",
    "double": "DOUBLE PRECISION",
    "float": "REAL",
    "boolean": "BOOLEAN",
    "timestamp": "TIMESTAMPTZ",
    "timestamp_ntz": "TIMESTAMP",
    "date": "DATE",
    "binary": "BYTEA",
}


def column_type(spark_type: str) -> str:
    """PostgreSQL's type for a Spark SQL type (simpleString); nested values are stored as JSONB."""
    if spark_type in _SIMPLE:
        return _SIMPLE[spark_type]
    decimal = re.fullmatch(r"decimal\((\d+),(\d+)\)", spark_type)
    if decimal:
        return f"NUMERIC({decimal.group(1)},{decimal.group(2)})"
    return "JSONB"


def key_columns(spec, names: list[str]) -> list[str]:
    if spec.key_columns:
        return list(spec.key_columns)
    return window_and_tags(names)


def upsert_statement(table: str, names: list[str], keys: list[str]):
    """INSERT ... ON CONFLICT (keys) DO UPDATE, every identifier quoted by psycopg (pure)."""
    from psycopg import sql

    others = [n for n in names if n not in keys]
    update = (
        sql.SQL("DO UPDATE SET {}").format(
            sql.SQL(", ").join(sql.SQL("{} = EXCLUDED.{}").format(sql.Identifier(n), sql.Identifier(n)) for n in others)
        )
        if others
        else sql.SQL("DO NOTHING")
    )
    return sql.SQL("INSERT INTO {} ({}) VALUES ({}) ON CONFLICT ({}) {}").format(
        _table(table),
        sql.SQL(", ").join(map(sql.Identifier, names)),
        sql.SQL(", ").join(sql.Placeholder() * len(names)),
        sql.SQL(", ").join(map(sql.Identifier, keys)),
        update,
    )


def create_statement(table: str, columns: list[dict], keys: list[str]):
    from psycopg import sql

    defs = [sql.SQL("{} {}").format(sql.Identifier(c["name"]), sql.SQL(column_type(c["type"]))) for c in columns]
    return sql.SQL("CREATE TABLE IF NOT EXISTS {} ({}, PRIMARY KEY ({}))").format(
        _table(table), sql.SQL(", ").join(defs), sql.SQL(", ").join(map(sql.Identifier, keys))
    )


def _table(table: str):
    from psycopg import sql

    return sql.Identifier(*table.split("."))


class _Refused(Exception):
    """PostgreSQL refused the data, the table or the login: retrying would not help."""


# what the server answers when the login itself is refused (wrong password, a role or database
# pg_hba.conf does not let in, CONNECT not granted, no such role or database): never retried
_LOGIN_REFUSED = re.compile(
    r"password authentication failed|no pg_hba\.conf entry|permission denied for database|"
    r"CONNECT privilege|role \S+ does not exist|database \S+ does not exist|"
    r"no password supplied|authentication failed",
    re.IGNORECASE,
)


def login_refusal(error: Exception) -> str | None:
    """The server's reason when `error` is a refused login, else None (the server may just be down)."""
    text = str(error)
    if not _LOGIN_REFUSED.search(text):
        return None
    fatal = [line.strip() for line in text.splitlines() if "FATAL" in line or "fe_sendauth" in line]
    return (fatal[-1] if fatal else text.strip().splitlines()[-1])[:300]


class PostgresSink(Sink):
    kind = "postgres"
    reads_batch_once = True  # one collect; a retry resends what it collected
    permanent = (_Refused,)

    def __init__(self, plan, columns, **kwargs):
        super().__init__(plan, columns, **kwargs)
        self.spec = plan.job.sink.postgres
        self.names = [c["name"] for c in columns]
        self.keys = key_columns(self.spec, self.names)
        self.json_columns = {c["name"] for c in columns if column_type(c["type"]) == "JSONB"}
        self._conn = None
        self._ready = False

    @classmethod
    def check(cls, plan, columns):
        spec = plan.job.sink.postgres
        names = [c["name"] for c in columns]
        keys = key_columns(spec, names)
        if not keys:
            raise DaggerError(
                "sink postgres: no key to upsert by: the query has no window_timestamp, tag_* or "
                "label_* column; name the key with key_columns"
            )
        unknown = [k for k in keys if k not in names]
        if unknown:
            raise DaggerError(
                f"sink postgres: key_columns {', '.join(unknown)} are not output columns of the "
                f"query (its columns: {', '.join(names)})"
            )
        seen = set()
        for name in names:
            if name.lower() in seen:
                raise DaggerError(f"sink postgres: two output columns are both named {name!r} (ignoring case)")
            seen.add(name.lower())

    def describe(self) -> str:
        return f"postgres {self.spec.url} table {self.spec.table} (upsert by {', '.join(self.keys)})"

    def _url(self) -> str:
        return self.spec.url[len("jdbc:") :] if self.spec.url.startswith("jdbc:") else self.spec.url

    def where(self) -> str:
        """Which server, database and login, for errors (the URL holds no password)."""
        from psycopg.conninfo import conninfo_to_dict

        try:
            info = conninfo_to_dict(self._url())
        except Exception:  # noqa: BLE001 - the URL was checked when the spec loaded; say what we have
            info = {}
        user = self.spec.user or info.get("user") or "(the OS user)"
        return (
            f"sink postgres: PostgreSQL at {info.get('host', '?')}:{info.get('port', 5432)} database "
            f"{info.get('dbname', '?')!r} as role {user!r}"
        )

    def _connect(self):
        import psycopg

        if self._conn is None or self._conn.closed:
            password = self.spec.password.get_secret_value() if self.spec.password else None
            try:
                self._conn = psycopg.connect(self._url(), user=self.spec.user, password=password, connect_timeout=10)
            except psycopg.OperationalError as e:
                reason = login_refusal(e)
                if reason is None:
                    raise
                raise _Refused(
                    f"{self.where()} refused the login: {reason}; a dagger logs in with its team's "
                    "sink credential, to its team's database only"
                ) from None
            self._ready = False
        if not self._ready:
            self._prepare(self._conn)
            self._ready = True
        return self._conn

    def _prepare(self, conn) -> None:
        """Create the table when missing; refuse one that lacks our columns or our key."""
        with conn.transaction():
            conn.execute(create_statement(self.spec.table, self.columns, self.keys))
        schema, _, name = self.spec.table.rpartition(".")
        rows = conn.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = %s"
            " AND table_schema = COALESCE(NULLIF(%s, ''), current_schema())",
            (name, schema),
        ).fetchall()
        conn.commit()
        existing = {r[0] for r in rows}
        missing = [n for n in self.names if n not in existing]
        if missing:
            raise _Refused(f"table {self.spec.table} exists without the columns {', '.join(missing)}")

    def write(self, dataframe, batch_id: int) -> int:
        result = collect(dataframe)
        rows = [self._values(row) for row in result.rows]
        if rows:
            statement = upsert_statement(self.spec.table, self.names, self.keys)
            self._retry(f"batch {batch_id}", lambda: self._upsert(statement, rows))
        self.stats.rows += len(rows)
        self.stats.batches += 1
        return len(rows)

    def _values(self, row: tuple) -> tuple:
        from psycopg.types.json import Jsonb

        out = []
        for name, value in zip(self.names, row):
            if name in self.json_columns and value is not None:
                value = Jsonb(_plain(value))
            out.append(value)
        return tuple(out)

    def _upsert(self, statement, rows) -> None:
        import psycopg

        try:
            conn = self._connect()
            with conn.transaction():
                with conn.cursor() as cur:
                    cur.executemany(statement, rows)
        except (
            psycopg.errors.DataError,
            psycopg.errors.IntegrityError,
            psycopg.errors.SyntaxError,
            psycopg.errors.UndefinedColumn,
            psycopg.errors.InsufficientPrivilege,
        ) as e:
            reason = str(e).strip().splitlines()[0][:300] if str(e).strip() else type(e).__name__
            if isinstance(e, psycopg.errors.InsufficientPrivilege):
                raise _Refused(f"{self.where()} may not write table {self.spec.table!r}: {reason}") from None
            raise _Refused(f"{self.where()} refused the rows for table {self.spec.table!r}: {reason}") from None
        except psycopg.Error:
            if self._conn is not None:
                self._conn.close()
            raise

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()


def _plain(value):
    if hasattr(value, "asDict"):
        return {k: _plain(v) for k, v in value.asDict(recursive=False).items()}
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return json.loads(json.dumps(value, default=str))
