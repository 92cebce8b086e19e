"""The house's Python passes ruff (its rules are in pyproject.toml's [tool.ruff]) and is laid out as
`ruff format` lays it out, and ruff, as set up here, does catch what it is there for."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RUFF = [sys.executable, "-m", "ruff"]


def test_the_house_passes_ruff():
    proc = subprocess.run(
        [*RUFF, "check", "--no-cache", "--output-format", "concise", "."],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_house_is_laid_out_by_ruff_format():
    proc = subprocess.run(
        [*RUFF, "format", "--no-cache", "--check", "."], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, "run `ruff format .`:\n" + proc.stdout + proc.stderr


def test_ruff_format_with_the_houses_settings_would_change_a_badly_laid_out_file(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("x = {  'a':1 }\n")
    proc = subprocess.run(
        [*RUFF, "format", "--no-cache", "--check", "--config", str(REPO / "pyproject.toml"), str(bad)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1 and "would be reformatted" in proc.stdout, proc.stdout + proc.stderr


def test_ruff_with_the_houses_settings_refuses_an_unused_import_a_blind_except_and_unsorted_imports(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import sys\nimport os\n\n\ndef f():\n    try:\n        return 1\n    except Exception:\n        return 2\n"
    )
    proc = subprocess.run(
        [
            *RUFF,
            "check",
            "--no-cache",
            "--output-format",
            "concise",
            "--config",
            str(REPO / "pyproject.toml"),
            str(bad),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1
    codes = {line.split()[1] for line in proc.stdout.splitlines() if line.startswith(str(bad))}
    assert {"F401", "BLE001", "I001"} <= codes, proc.stdout
