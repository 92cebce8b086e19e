"""`influx`: results as InfluxDB points, raystack/dagger's mapping.

`window_timestamp` is the point's time (milliseconds); `tag_*` columns are tags under their own
name, `label_*` columns are tags without the prefix; every other column is a field; NULLs are
left out. A point with the same measurement, tags and time replaces the earlier one, so a batch
written twice stores its windows once.

InfluxDB 1.x (dagger's target; Debian ships 1.6) takes line protocol on /write. `api: v2` writes
through influxdb-client's v2 write API instead (InfluxDB 2.x, 1.8+, VictoriaMetrics), the bucket
being `db_name` (plus `/retention_policy`); with a `username` it logs in by HTTP basic auth (1.8,
VictoriaMetrics' -httpAuth), with a password alone that is a 2.x token.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import math
from urllib.parse import urlencode

from ..errors import DaggerError
from . import line_protocol
from .base import WINDOW_COLUMN, Sink, collect

TAG_PREFIX = "tag_"
LABEL_PREFIX = "label_"
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


class InfluxRefused(Exception):
    """InfluxDB answered 4xx: the data is wrong, and will be wrong again."""


def tag_name(column: str) -> str | None:
    if column.startswith(LABEL_PREFIX):
        return column[len(LABEL_PREFIX) :]
    if column.startswith(TAG_PREFIX):
        return column
    return None


def _field_value(value):
    if isinstance(value, bool) or isinstance(value, (int, str)):
        return value
    if isinstance(value, float):
        return None if math.isnan(value) or math.isinf(value) else value
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, dt.datetime):
        return int((value - _EPOCH) / dt.timedelta(milliseconds=1))
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode("ascii")
    return str(value)


def points(measurement: str, names: list[str], rows: list[tuple]):
    """influxdb-client Points for result rows (pure)."""
    from influxdb_client import Point, WritePrecision

    at = names.index(WINDOW_COLUMN)
    out = []
    for row in rows:
        when = row[at]
        if when is None:
            continue
        point = Point(measurement).time(int((when - _EPOCH) / dt.timedelta(milliseconds=1)), WritePrecision.MS)
        fields = 0
        for name, value in zip(names, row):
            if name == WINDOW_COLUMN or value is None:
                continue
            tag = tag_name(name)
            if tag is not None:
                text = str(value)
                if text:
                    point = point.tag(tag, text)
            else:
                value = _field_value(value)
                if value is not None:
                    point = point.field(name, value)
                    fields += 1
        if fields:  # a point without fields is refused by InfluxDB
            out.append(point)
    return out


# request bodies sent at once: InfluxDB parses and writes concurrent requests on its cores
POSTS_AT_ONCE = 4


class InfluxSink(Sink):
    kind = "influx"
    reads_batch_once = True  # one collect; a retry resends what it collected
    permanent = (InfluxRefused,)

    def __init__(self, plan, columns, **kwargs):
        super().__init__(plan, columns, **kwargs)
        self.spec = plan.job.sink.influx
        self._http = None
        self._client = None

    @classmethod
    def check(cls, plan, columns):
        names = [c["name"] for c in columns]
        if WINDOW_COLUMN not in names:
            raise DaggerError(
                f"sink influx: the query must have a {WINDOW_COLUMN} column, the time of each "
                f"point (e.g. TUMBLE_END(rowtime, INTERVAL '1' MINUTE) AS {WINDOW_COLUMN}); "
                f"its columns are {', '.join(names)}"
            )
        kind = next(c["type"] for c in columns if c["name"] == WINDOW_COLUMN)
        if not kind.startswith("timestamp"):
            raise DaggerError(f"sink influx: {WINDOW_COLUMN} must be a timestamp, it is {kind}")
        tags = {}
        for name in names:
            tag = tag_name(name)
            if tag is not None and tag in tags:
                raise DaggerError(f"sink influx: columns {tags[tag]} and {name} are both the tag {tag!r}")
            if tag is not None:
                tags[tag] = name
        if not [n for n in names if n != WINDOW_COLUMN and tag_name(n) is None]:
            raise DaggerError(
                "sink influx: the query has no field column (every column is the time or a "
                "tag), and InfluxDB refuses points without fields"
            )

    def describe(self) -> str:
        return f"influx {self.spec.url} db {self.spec.db_name} measurement {self.spec.measurement_name}"

    def write(self, dataframe, batch_id: int) -> int:
        size = self.spec.batch_size
        if line_protocol.applies(dataframe.schema, tag_name):  # built and joined in the JVM
            requests = line_protocol.bodies(dataframe, self.spec.measurement_name, tag_name, size)
        else:
            result = collect(dataframe)
            batch = [p.to_line_protocol() for p in points(self.spec.measurement_name, result.names, result.rows)]
            step = size or len(batch) or 1
            chunks = [batch[i : i + step] for i in range(0, len(batch), step)]
            requests = [("\n".join(chunk), len(chunk)) for chunk in chunks]
        written = self._post_all(requests, batch_id)
        self.stats.rows += written
        self.stats.batches += 1
        return written

    def _post_all(self, requests: list[tuple[str, int]], batch_id: int) -> int:
        """Every body, each retried on its own, a few at once (InfluxDB takes concurrent writes
        on all its cores); the first body that fails for good fails the batch."""
        from concurrent.futures import ThreadPoolExecutor

        if len(requests) <= 1:
            for body, _ in requests:
                self._retry(f"batch {batch_id}", lambda: self._post(body))  # noqa: B023 - called at once
            return sum(count for _, count in requests)
        self._connect()  # one client for the threads, made before them
        with ThreadPoolExecutor(max_workers=min(len(requests), POSTS_AT_ONCE)) as pool:
            sent = [
                pool.submit(self._retry, f"batch {batch_id}", lambda body=body: self._post(body))
                for body, _ in requests
            ]
            for future in sent:
                future.result()
        return sum(count for _, count in requests)

    # -- InfluxDB 1.x: line protocol on /write --------------------------------------------
    def _post(self, body: str) -> None:
        """One request of points in line protocol, a line each."""
        if self.spec.api == "v2":
            return self._post_v2(body)
        import urllib3

        self._connect()
        fields = {"db": self.spec.db_name, "precision": "ms"}
        if self.spec.retention_policy:
            fields["rp"] = self.spec.retention_policy
        headers = {"Content-Type": "text/plain; charset=utf-8"}
        if self.spec.username:
            password = self.spec.password.get_secret_value() if self.spec.password else ""
            headers.update(urllib3.make_headers(basic_auth=f"{self.spec.username}:{password}"))

        url = self.spec.url.rstrip("/") + "/write?" + urlencode(fields)
        response = self._http.request("POST", url, body=body.encode("utf-8"), headers=headers)
        if response.status >= 300:
            text = response.data.decode("utf-8", "replace")[:300]
            if response.status in (401, 403):
                raise InfluxRefused(self._refused_login(response.status, text))
            if 400 <= response.status < 500 and response.status not in (408, 429):
                raise InfluxRefused(f"InfluxDB refused the points (HTTP {response.status}): {text}")
            raise ConnectionError(f"InfluxDB answered HTTP {response.status}: {text}")

    def _refused_login(self, status: int, text: str) -> str:
        """401: no or a wrong login; 403: a login without WRITE on the database. Names the sink,
        the user and the database (never the password)."""
        who = f"user {self.spec.username!r}" if self.spec.username else "an anonymous client (no username)"
        what = "refused the login of" if status == 401 else "does not let"
        tail = "" if status == 401 else " write there"
        return (
            f"sink influx: InfluxDB at {self.spec.url} {what} {who}{tail} (database {self.spec.db_name!r}, "
            f"HTTP {status}: {text.strip()}); a dagger writes with its team's sink credential to its team's "
            "database only"
        )

    def _connect(self) -> None:
        """The client of the sink's API, made once (thread-safe once made)."""
        if self.spec.api == "v2":
            if self._client is None:
                self._client = self._v2_client()
            return
        if self._http is None:
            import urllib3

            self._http = urllib3.PoolManager(retries=False, timeout=urllib3.Timeout(connect=5, read=30))

    def _v2_client(self):
        from influxdb_client import InfluxDBClient

        password = self.spec.password.get_secret_value() if self.spec.password else ""
        if self.spec.username:
            # a login: HTTP basic auth, which InfluxDB 1.8's v2 API and VictoriaMetrics
            # (-httpAuth.*) both check; a token alone is InfluxDB 2.x's "Token ..." header
            return InfluxDBClient(
                url=self.spec.url,
                token=f"{self.spec.username}:{password}",
                auth_basic=True,
                org=self.spec.org or "-",
                timeout=30_000,
                retries=False,
            )
        return InfluxDBClient(
            url=self.spec.url, token=password, org=self.spec.org or "-", timeout=30_000, retries=False
        )

    # -- the v2 write API (InfluxDB 2.x, 1.8+, VictoriaMetrics) through influxdb-client -------
    def _post_v2(self, body: str) -> None:
        from influxdb_client import WritePrecision
        from influxdb_client.client.write_api import SYNCHRONOUS
        from influxdb_client.rest import ApiException

        self._connect()
        bucket = self.spec.db_name + (f"/{self.spec.retention_policy}" if self.spec.retention_policy else "")
        try:
            self._client.write_api(write_options=SYNCHRONOUS).write(
                bucket=bucket, org=self.spec.org or "-", record=body, write_precision=WritePrecision.MS
            )
        except ApiException as e:
            if e.status in (401, 403):
                raise InfluxRefused(self._refused_login(e.status, (e.body or e.reason or "")[:300])) from None
            if e.status and 400 <= e.status < 500 and e.status not in (408, 429):
                raise InfluxRefused(
                    f"the v2 write API refused the points (HTTP {e.status}): {(e.body or e.reason or '')[:300]}"
                ) from None
            raise

    def close(self) -> None:
        if self._http is not None:
            self._http.clear()
        if self._client is not None:
            self._client.close()
