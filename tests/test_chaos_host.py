"""The host tools under the disk and network faults (chaos/faults/host.py), on real mounts: the
kernel's mount table read back with its escapes, a filesystem filled to the last byte, paths that
could reach mount(8)'s option string refused."""

from __future__ import annotations

import os
import subprocess

import pytest

from chaos.faults import FaultError, host
from chaos.faults.disk import DiskBreak, fill


@pytest.fixture
def tmpfs(tmp_path):
    """A 256 KiB tmpfs at a path with a space in it (mountinfo writes it as \\040)."""
    where = tmp_path / "a dir"
    where.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "chaos-test", str(where)], check=True)
    yield where
    for path in (where / "data", where):  # whatever a failed test left stacked, top first
        while host.mounts_at(path) and subprocess.run(["umount", str(path)], check=False).returncode == 0:
            pass


def test_the_mount_table_names_a_path_with_a_space_and_fill_leaves_no_byte(tmpfs):
    stack = host.mounts_at(tmpfs)
    assert [m["fstype"] for m in stack] == ["tmpfs"] and stack[0]["source"] == "chaos-test"
    assert host.mounts_at(tmpfs / "..") == []
    written = fill(tmpfs / "filler")
    assert written == os.path.getsize(tmpfs / "filler") and written > 200_000
    assert os.statvfs(tmpfs).f_bavail == 0
    with pytest.raises(OSError) as raised:
        (tmpfs / "more").write_bytes(b"x" * 4096)
    assert raised.value.errno == 28  # ENOSPC


def test_unmount_all_takes_only_the_kinds_it_is_told(tmpfs):
    # a tmpfs someone else mounted is left alone when the fault unmounts its own overlay kind
    assert host.unmount_all(tmpfs, fstypes=("overlay",)) == 0
    assert [m["fstype"] for m in host.mounts_at(tmpfs)] == ["tmpfs"]
    assert host.unmount_all(tmpfs, fstypes=("tmpfs",)) == 1
    assert host.mounts_at(tmpfs) == []


@pytest.mark.parametrize("path", ["/tmp/a,upperdir=/etc", "/tmp/a:b", "/tmp/a b", "/tmp/a\nb", "/tmp/é"])
def test_paths_that_could_reach_mounts_option_string_are_refused(path):
    with pytest.raises(FaultError, match="letters, digits"):
        host.safe_path(path)


def test_a_tool_failure_says_the_command_and_its_message():
    with pytest.raises(FaultError, match=r"umount .*/no/such/mount failed: .*"):
        host.run("umount", "/no/such/mount")
    with pytest.raises(FaultError, match="not an nft table name"):
        host.nft_table_exists("inet", "x; flush ruleset")


def test_undo_takes_off_a_half_made_disk_break_down_to_the_mounts_there_before(tmpfs):
    """A drill killed between disk-break's bind mount and its read-only remount leaves a writable
    bind mount: undo removes it too, and leaves the mount the directory had before (a data disk)."""
    data = tmpfs / "data"
    data.mkdir()
    subprocess.run(["mount", "--bind", str(data), str(data)], check=True)  # half-made: still rw
    fault = DiskBreak.__new__(DiskBreak)
    DiskBreak._unmount(fault, str(data), 0)
    assert host.mounts_at(data) == []
    # a directory that is a mount point itself (the tmpfs here) keeps that mount
    DiskBreak._mount(fault, str(tmpfs))
    with pytest.raises(OSError) as raised:
        (tmpfs / "x").write_bytes(b"x")
    assert raised.value.errno == 30  # EROFS
    DiskBreak._unmount(fault, str(tmpfs), 1)
    assert [m["fstype"] for m in host.mounts_at(tmpfs)] == ["tmpfs"]
    (tmpfs / "x").write_bytes(b"x")
