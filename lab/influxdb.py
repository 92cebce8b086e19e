"""InfluxDB 1.x (Debian's `influxdb`) on loopback, configured by its environment variables
(INFLUXDB_<SECTION>_<KEY>), so no config file is written."""

from __future__ import annotations

import re
import shutil

from dagger_runtime import http_client

from .process import HOST, LocalServer, ServerError, free_ports


def rpc_wall_table(port: int) -> str:
    """The nftables table (family inet) by which the influxdb role lets only root connect to the
    backup and restore RPC on `port` (InfluxDB 1.x asks no login there)."""
    return f"dagger_influxdb_rpc_{int(port)}"


class InfluxDB(LocalServer):
    name = "influxdb"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.rpc_port = free_ports(1)[0]

    def command(self) -> list[str]:
        influxd = shutil.which("influxd")
        if not influxd:
            raise ServerError("influxd is not installed: run `make servers` (Debian package influxdb)")
        return [influxd, "run"]

    def env(self) -> dict[str, str]:
        env = super().env()
        env.update(
            {
                "INFLUXDB_REPORTING_DISABLED": "true",
                "INFLUXDB_BIND_ADDRESS": f"{HOST}:{self.rpc_port}",
                "INFLUXDB_META_DIR": str(self.data_dir / "meta"),
                "INFLUXDB_DATA_DIR": str(self.data_dir / "data"),
                "INFLUXDB_DATA_WAL_DIR": str(self.data_dir / "wal"),
                "INFLUXDB_DATA_QUERY_LOG_ENABLED": "false",
                "INFLUXDB_HTTP_BIND_ADDRESS": f"{HOST}:{self.port}",
                "INFLUXDB_HTTP_LOG_ENABLED": "false",
                "INFLUXDB_MONITOR_STORE_ENABLED": "false",
            }
        )
        return env

    def healthy(self) -> bool:
        return http_client.get(f"{self.url}/ping", timeout=1).status_code == 204

    def query(self, q: str, db: str | None = None) -> list[dict]:
        """InfluxQL, as the seeds' dashboards ask it; the series of the first statement."""
        params = {"q": q, "epoch": "ms"} | ({"db": db} if db else {})
        body = http_client.post(f"{self.url}/query", data=params, timeout=30).json()
        result = body["results"][0]
        if "error" in result:
            raise ServerError(f"InfluxQL {q!r}: {result['error']}")
        return result.get("series", [])

    def create_database(self, db: str) -> None:
        if not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", db):
            raise ValueError(f"a database name of letters, digits, '_' and '-', got {db!r}")
        self.query(f'CREATE DATABASE "{db}"')
