"""`log`: one JSON object per result row on stdout, exactly as preview prints them."""

from __future__ import annotations

import sys

from ..output import dumps, rows_as_dicts
from .base import Sink


class LogSink(Sink):
    kind = "log"
    reads_batch_once = True  # one collect

    def write(self, dataframe, batch_id: int) -> int:
        out = self.out or sys.stdout
        rows = rows_as_dicts(dataframe)
        for row in rows:
            out.write(dumps(row) + "\n")
        out.flush()
        self.stats.rows += len(rows)
        self.stats.batches += 1
        return len(rows)
