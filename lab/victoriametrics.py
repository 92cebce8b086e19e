"""VictoriaMetrics (Debian's `victoria-metrics`) on loopback: a server of InfluxDB's v2 write API
for the influx sink's `api: v2`, read back through its own query API."""
from __future__ import annotations

import json
import shutil
import urllib.parse
import urllib.request

from .process import HOST, LocalServer, ServerError


class VictoriaMetrics(LocalServer):
    name = "victoria-metrics"

    def command(self) -> list[str]:
        binary = shutil.which("victoria-metrics")
        if not binary:
            raise ServerError("victoria-metrics is not installed: run `make servers` (Debian package "
                              "victoria-metrics)")
        # a long retention: the test traffic has fixed dates, which must not age out
        return [binary, f"-storageDataPath={self.data_dir / 'data'}", f"-httpListenAddr={HOST}:{self.port}",
                "-retentionPeriod=100y", "-loggerLevel=WARN"]

    def healthy(self) -> bool:
        with urllib.request.urlopen(f"{self.url}/health", timeout=1) as r:
            return r.status == 200

    def export(self, match: str) -> list[dict]:
        """Every sample of the series matching a selector, as /api/v1/export gives them."""
        with urllib.request.urlopen(f"{self.url}/internal/force_flush", timeout=10):
            pass
        query = urllib.parse.urlencode({"match[]": match})
        with urllib.request.urlopen(f"{self.url}/api/v1/export?{query}", timeout=30) as r:
            return [json.loads(line) for line in r.read().decode().splitlines() if line.strip()]
