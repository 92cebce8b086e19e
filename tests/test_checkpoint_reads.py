"""The deploy tooling reads a team's checkpoint files, possibly as root, during a failover: a team
that plants a FIFO (which would block the read for ever), a huge file or a link there gets an
answer or a clear refusal, never a hung or exhausted tool (dagger_runtime/lifecycle/state.py,
run.read_start, launches.read_regular)."""

from __future__ import annotations

import os
import threading

import pytest

from dagger_runtime import launches
from dagger_runtime.errors import DaggerError
from dagger_runtime.lifecycle.state import Start, committed_watermark, first_start
from dagger_runtime.run import STARTING_FILE


def within(seconds: float, call):
    """call(), which must return or raise within `seconds` (a blocked read would not)."""
    box = {}

    def run():
        try:
            box["value"] = call()
        except Exception as e:  # noqa: BLE001 - handed back to the test
            box["error"] = e

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"{call} blocked"
    if "error" in box:
        raise box["error"]
    return box["value"]


def test_a_fifo_as_the_starting_file_is_not_read(tmp_path):
    os.mkfifo(tmp_path / STARTING_FILE)
    assert within(5, lambda: first_start(str(tmp_path), [], 1234)) == Start("timestamp", 1234)


def test_a_fifo_or_a_huge_file_as_an_offset_log_is_refused(tmp_path):
    (tmp_path / "commits").mkdir()
    (tmp_path / "offsets").mkdir()
    (tmp_path / "commits" / "0").write_text("v1\n{}\n")
    os.mkfifo(tmp_path / "offsets" / "0")
    (tmp_path / "commits" / "1").write_text("v1\n{}\n")
    with open(tmp_path / "offsets" / "1", "wb") as f:  # sparse: 20 GB of nothing
        f.truncate(20 << 30)
    with pytest.raises(DaggerError, match="not a regular file of at most 16 MB"):
        within(5, lambda: committed_watermark(str(tmp_path)))


def test_read_regular_reads_files_and_nothing_else(tmp_path):
    (tmp_path / "a").write_text("ok\n")
    (tmp_path / "link").symlink_to(tmp_path / "a")
    os.mkfifo(tmp_path / "fifo")
    assert launches.read_regular(tmp_path / "a", 10) == "ok\n"
    assert launches.read_regular(tmp_path / "a", 2) is None  # larger than the limit
    assert launches.read_regular(tmp_path / "link", 10) is None
    assert within(5, lambda: launches.read_regular(tmp_path / "fifo", 10)) is None
    assert launches.read_regular(tmp_path / "missing", 10) is None
