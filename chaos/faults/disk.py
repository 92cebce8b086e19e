"""A broker's data disk failing: broken (writes fail with EROFS) or full (writes fail with ENOSPC).

LOKI's data_disk_failure. Both work on the path the broker writes through, not on its disk: the
lab's brokers share one filesystem with everything else, which must not fill up. Files the broker
holds open keep working, as on a real disk whose failure shows at the next write that allocates;
Kafka writes its checkpoints through new files every few seconds, fails, takes the log directory
offline and, with its only log directory (and the KRaft metadata log) gone, shuts down. supervisord
tries to restart it and gives up while the disk is bad.

- disk-break: a read-only bind mount of the data directory over itself.
- disk-fill: an overlay over the data directory whose upper layer is a small tmpfs filled to the
  last byte, so every new write finds the filesystem full. At undo the upper layer is discarded:
  what the broker could not write never was, as with a real full disk.

Undo stops the broker, unmounts what the fault stacked (down to the mounts the directory had
before it, so a crash between two mounts leaves nothing behind) and starts it; health is the Kafka faults' own (registered, unfenced, nothing under-replicated).
"""

from __future__ import annotations

import errno
import os
import shutil
import time
from pathlib import Path

from . import host
from .base import STOP_TIMEOUT_S, require_running, start_programs
from .errors import FaultError
from .kafka import BrokerFault
from .supervisor import DOWN_STATES
from .targets import broker_properties

FILL_LAYER_BYTES = 1 << 20  # the tmpfs of the full layer: small, and filled before it is used
LAYER_SOURCE = "dagger-chaos-full"  # the source name of the full layer's mounts, in the mount table


def data_dirs(fault: BrokerFault) -> dict[str, list[str]]:
    """Each target program's log directories (log.dirs, or log.dir), from its server.properties."""
    supervisor = fault._supervisor()
    out = {}
    for program in fault.programs:
        props = broker_properties(supervisor, program)
        dirs = [d.strip() for d in (props.get("log.dirs") or props.get("log.dir") or "").split(",") if d.strip()]
        if not dirs:
            raise FaultError(f"{program}: no log.dirs in its server.properties")
        out[program] = [host.safe_path(d) for d in dirs]
    return out


class DiskFault(BrokerFault):
    """The mounts it made are recorded (params["mounts"]: each directory's mount count before)
    before each is made."""

    def _inject(self) -> None:
        supervisor = self._supervisor()
        require_running(supervisor, self.programs)
        dirs = data_dirs(self)
        for program in self.programs:
            for path in dirs[program]:
                if any(m["source"] == LAYER_SOURCE for m in host.mounts_at(path)):
                    raise FaultError(f"{path} has a disk fault's mount on it already: refusing to stack another")
        # how many mounts each directory had (a data disk mounted there, on a real machine): undo
        # takes off what is above that, whatever a crash left half-made
        self.params.setdefault("mounts", {})
        for program in self.programs:
            self._affect([program])
            for path in dirs[program]:
                self.params["mounts"][path] = len(host.mounts_at(path))
                self._changed()
                self._mount(path)
        self.injected_at = self.injected_at or time.time()

    def _mount(self, path: str) -> None:
        raise NotImplementedError

    def _unmount(self, path: str, depth: int) -> None:
        while len(host.mounts_at(path)) > depth:
            host.run("umount", path)

    def _restore(self) -> None:
        supervisor = self._supervisor()
        # stopped first: a broker that still runs (or that supervisord is restarting) must not
        # see its directory change under it
        for program in self.affected:
            supervisor.stop(program)
        off = supervisor.wait(self.affected, DOWN_STATES, STOP_TIMEOUT_S)
        if off:
            raise FaultError("did not stop: " + ", ".join(f"{p} ({s})" for p, s in off.items()))
        for path, depth in reversed(list(self.params.get("mounts", {}).items())):
            self._unmount(path, depth)
        start_programs(self, [self.affected])


class DiskBreak(DiskFault):
    kind = "disk-break"

    def _mount(self, path: str) -> None:
        host.run("mount", "--bind", path, path)
        # read-only only on this new mount: the broker's open files are on the one beneath
        host.run("mount", "-o", "remount,ro,bind", path)


def _layer_dir(fault: "DiskFill", path: str) -> Path:
    return fault.lab.dir / "chaos" / "disk-fill" / path.strip("/").replace("/", "_")


class DiskFill(DiskFault):
    kind = "disk-fill"

    def _mount(self, path: str) -> None:
        layer = _layer_dir(self, path)
        host.safe_path(layer.parent)
        layer.mkdir(parents=True, exist_ok=True)
        if not any(m["source"] == LAYER_SOURCE for m in host.mounts_at(layer)):
            host.run("mount", "-t", "tmpfs", "-o", f"size={FILL_LAYER_BYTES},mode=0700", LAYER_SOURCE, str(layer))
        (layer / "upper").mkdir(exist_ok=True)
        (layer / "work").mkdir(exist_ok=True)
        fill(layer / "filler")
        host.run(
            "mount",
            "-t",
            "overlay",
            LAYER_SOURCE,
            "-o",
            f"lowerdir={path},upperdir={layer}/upper,workdir={layer}/work",
            path,
        )

    def _unmount(self, path: str, depth: int) -> None:
        super()._unmount(path, depth)
        layer = _layer_dir(self, path)
        if layer.exists():
            host.unmount_all(layer, fstypes=("tmpfs",))
            shutil.rmtree(layer, ignore_errors=True)


def fill(path: Path) -> int:
    """Write zeros to `path` until its filesystem is full; the bytes written."""
    written = 0
    block = b"\0" * 65536
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        while True:
            try:
                n = os.write(fd, block)
            except OSError as e:
                if e.errno != errno.ENOSPC:
                    raise
                if len(block) == 1:
                    break
                block = block[: len(block) // 2]
                continue
            written += n
    finally:
        os.close(fd)
    return written
