"""Where drill runs are kept: one folder per run, and history.jsonl across them."""

from __future__ import annotations

import os
from pathlib import Path

RUNS_DIR = Path(os.environ.get("DAGGER_DRILL_RUNS", "out/drills"))
