"""One writer per checkpoint: the lease a driver holds while its query runs, and the fence that
retires the drivers of an older version.

A dagger may have a standby driver on another Spark cluster: started, its Spark session and
executors up, waiting. The driver whose query runs holds an exclusive `flock` on `dagger-lease` in
the checkpoint; the kernel lets it go the moment that process dies (SIGKILL, a lost worker, a
stopped JVM), and the standby, polling, takes it and starts the query from the checkpoint. A
takeover thus waits for no master, registry or command: the checkpoint itself says who writes.

The fence (`dagger-fence`, one number) is the lowest registry version that may still run on the
checkpoint. The deploy tooling writes it before it stops or replaces a version; a driver of a
lower version that takes the lease gives it back and ends (exit 0, so `--supervise` does not
start it again), and one that holds it stops its query within seconds. A standby on a cluster
that could not be reached when its dagger was stopped therefore never writes.

Local checkpoints only: the clusters share the folder (the lab's disk, a VM's mounted volume).
`flock` means nothing on object storage; a standby is refused there (operations.deploy).
"""

from __future__ import annotations

import fcntl
import json
import os
import secrets
import socket
import stat
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from .errors import DaggerError
from .launches import local_root, read_regular

LEASE_FILE = "dagger-lease"
FENCE_FILE = "dagger-fence"
STANDBY_FILE = "dagger-standby"  # the standby that is ready: {"pid", "master", "version", "warm", "ready_ms"}
HANDOFF_FILE = "dagger-handoff"  # the tooling's order to this checkpoint's standby: run the next version
POLL_S = 0.25  # how often a standby tries the lease: a quarter second of the RTO
FIRST_DRIVER_WAIT_S = 600.0  # how long a standby lets its version's first driver come up first
HANDOFF_WAIT_S = 180.0  # how long a fenced standby waits for a handoff before it ends (the
# tooling first stops the old driver: a kill and its end take up to ~2 min)
_MAX_READ = 4096  # the holder's line and the fence are tiny; more is not theirs


class Fenced(DaggerError):
    """This driver's version was replaced or stopped: it must not write the checkpoint."""


class HandedOff(Exception):
    """A standby was told to run the dagger's next version instead (a Kafka failover: a new
    checkpoint on the copy of its streams). `order`: {"version", "spec", "checkpoint", "starting",
    "emit_after_ms"}, as the tooling wrote it (checked by the driver before it is used)."""

    def __init__(self, order: dict):
        super().__init__(f"handed version {order.get('version')} on {order.get('checkpoint')}")
        self.order = order


@dataclass
class Lease:
    root: Path
    fd: int
    version: int | None
    waited_s: float  # how long this driver waited as a standby (0: it took the lease at once)

    def fenced(self) -> int | None:
        """The fence, when it now excludes this driver's version (checked while the query runs)."""
        fence = read_fence(self.root)
        return fence if fence is not None and self.version is not None and self.version < fence else None

    def release(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)  # closing the last descriptor of the open file releases the flock
            self.fd = -1


def _open_lease(root: Path) -> int:
    root.mkdir(parents=True, exist_ok=True)
    path = root / LEASE_FILE
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o600)
    except OSError as e:
        raise DaggerError(
            f"the checkpoint's lease {path} cannot be opened ({e.strerror}): it must be a "
            "regular file the driver can write, not a link"
        ) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise DaggerError(f"the checkpoint's lease {path} is not a regular file")
    return fd


def _try_lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False


def _read_small(path: Path) -> str | None:
    """A small regular file's text, without following a link or blocking (the folder is the
    team's; the tooling reading it may be root)."""
    return read_regular(path, _MAX_READ)


def read_fence(root: Path) -> int | None:
    text = _read_small(root / FENCE_FILE)
    try:
        return int(text.strip()) if text and text.strip().isdigit() else None
    except ValueError:
        return None


def _read_line(checkpoint: str, name: str) -> dict | None:
    """The JSON object a driver wrote in the checkpoint's file `name` (None: none, or not one)."""
    root = local_root(checkpoint)
    text = _read_small(root / name) if root is not None else None
    try:
        found = json.loads(text) if text else None
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


def holder(checkpoint: str) -> dict | None:
    """Who last took the lease (pid, host, master, version, since_ms), as it wrote; None if no one
    did or the checkpoint is not local. Whether it still holds it: `held`."""
    return _read_line(checkpoint, LEASE_FILE)


def held(checkpoint: str) -> bool | None:
    """Whether a live driver holds the checkpoint's lease now (None: not local, or never taken)."""
    root = local_root(checkpoint)
    if root is None:
        return None
    try:
        fd = os.open(root / LEASE_FILE, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        try:
            # a shared lock for an instant: refused while a driver holds the exclusive one
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        return False
    finally:
        os.close(fd)


def _pinned_dir(checkpoint: str, within: str | None) -> int | None:
    """An open descriptor of the checkpoint's folder (None if it is not local, or, without
    `within`, not there). With `within` (the cluster's checkpoint root, whose own path the
    platform owns): walked down from it one folder at a time without following a link, creating
    what is missing (owned like `within`, 0700). The part below the root is the team's own, and a
    link there would point the deploy tooling, which may run as root, at another team's folder."""
    root = local_root(checkpoint)
    if root is None:
        return None
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
    if within is None:
        try:
            return os.open(root, flags)
        except OSError:
            return None
    below = os.path.relpath(os.path.abspath(root), os.path.abspath(within))
    if below == "." or below.startswith(".."):
        raise DaggerError(f"the checkpoint {checkpoint} is not below {within}; it was not fenced")
    folder = os.open(within, flags)
    owner = os.fstat(folder)
    try:
        for part in below.split(os.sep):
            try:
                step = os.open(part, flags | os.O_NOFOLLOW, dir_fd=folder)
            except FileNotFoundError:
                # its drivers have not started yet: the fence must be there before they do
                os.mkdir(part, 0o700, dir_fd=folder)
                os.chown(part, owner.st_uid, owner.st_gid, dir_fd=folder, follow_symlinks=False)
                step = os.open(part, flags | os.O_NOFOLLOW, dir_fd=folder)
            except OSError as e:
                raise DaggerError(
                    f"the checkpoint {checkpoint}: {part} is not a folder ({e.strerror}: a link in "
                    "the team's part of the path?); it was not fenced"
                ) from None
            os.close(folder)
            folder = step
        return folder
    except BaseException:
        os.close(folder)
        raise


def fence(checkpoint: str, version: int, *, within: str | None = None) -> bool:
    """Let only drivers of `version` or later run on the checkpoint (a fence never goes down: an
    older operation finishing late cannot let an old version back). False for a checkpoint that is
    not local (or not there, without `within`)."""

    def text(old: str | None) -> str:
        return f"{max(int(version), int(old.strip())) if old and old.strip().isdigit() else int(version)}\n"

    return _write_pinned(checkpoint, FENCE_FILE, text, within)


def hand_off(checkpoint: str, order: dict, *, within: str | None = None) -> bool:
    """Tell the checkpoint's standby (already fenced off it) to run the next version: `order` as
    HandedOff says. Written like the fence."""
    line = json.dumps(order, sort_keys=True, separators=(",", ":")) + "\n"
    if len(line) > _MAX_READ:
        raise DaggerError(f"the handoff for {checkpoint} is too long ({len(line)} bytes)")
    return _write_pinned(checkpoint, HANDOFF_FILE, lambda old: line, within)


def read_handoff(root: Path, version: int | None) -> dict | None:
    """The handoff in the checkpoint folder `root` for a standby of `version`: one naming a later
    version, else None."""
    text = _read_small(root / HANDOFF_FILE)
    try:
        order = json.loads(text) if text else None
    except ValueError:
        return None
    if not isinstance(order, dict) or not isinstance(order.get("version"), int) or version is None:
        return None
    return order if order["version"] > version else None


def _write_pinned(checkpoint: str, name: str, text, within: str | None) -> bool:
    """Write the file `name` whole in the checkpoint's folder held open (`_pinned_dir`), then
    rename it over the old one, so a link planted under either name is replaced, never followed.
    `text(old)` gives the new content from the old one's (None: none)."""
    folder = _pinned_dir(checkpoint, within)
    if folder is None:
        return False
    temp = f".{name}-{secrets.token_hex(8)}"
    try:
        new = text(read_regular(Path(f"/proc/self/fd/{folder}") / name, _MAX_READ))
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=folder)
        try:
            os.write(fd, new.encode())
            os.fchmod(fd, 0o644)
            owner = os.fstat(folder)
            if os.geteuid() == 0:  # the folder's owner's, like everything else in it
                os.fchown(fd, owner.st_uid, owner.st_gid)
        finally:
            os.close(fd)
        os.replace(temp, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        try:
            os.unlink(temp, dir_fd=folder)
        except OSError:
            pass
        raise
    finally:
        os.close(folder)
    return True


def _excluded(root: Path, version: int | None) -> bool:
    fence_at = read_fence(root)
    return fence_at is not None and version is not None and version < fence_at


def _follow_handoff(root: Path, version: int | None, stop: threading.Event | None, poll_s: float) -> None:
    """A fenced standby: raise HandedOff once the tooling says which version it runs instead (a
    Kafka failover writes it seconds after the fence), or Fenced if none comes."""
    deadline = time.monotonic() + HANDOFF_WAIT_S
    while True:
        order = read_handoff(root, version)
        if order is not None and order.get("cancelled"):
            raise Fenced(
                f"the handoff to version {order['version']} was cancelled (a new driver runs it): this "
                "standby ends without writing"
            )
        if order is not None:
            raise HandedOff(order)
        if time.monotonic() > deadline or (stop is not None and stop.is_set()):
            raise Fenced(
                f"version {version} of this dagger was stopped or replaced (the checkpoint {root} takes a "
                "later one) and no handoff came: this standby ends without writing"
            )
        time.sleep(poll_s)


def _taken_by(checkpoint: str, version: int | None) -> bool:
    found = holder(checkpoint)
    return bool(found) and (version is None or (isinstance(found.get("version"), int) and found["version"] >= version))


def _say_ready(root: Path, version: int | None, master: str | None, warm: bool | None = False) -> None:
    """Tell `dagger status` this standby has its session and query ready (a takeover now costs
    only the query's start), and whether its rehearsal has warmed its JVMs (None: it has none);
    a file of its own, replaced whole, never the lease's."""
    line = (
        json.dumps(
            {
                "pid": os.getpid(),
                "master": master,
                "version": version,
                "warm": warm,
                "ready_ms": int(time.time() * 1000),
            },
            sort_keys=True,
        )
        + "\n"
    )
    try:
        fd, temp = tempfile.mkstemp(prefix=".standby-", dir=root)
        with os.fdopen(fd, "w") as f:
            f.write(line)
        os.replace(temp, root / STANDBY_FILE)
    except OSError:
        pass  # status then says STARTING; the takeover does not depend on it


def say_warm(checkpoint: str, version: int | None, master: str | None, warm: bool | None) -> None:
    """A ready standby's rehearsal has ended (warm: True) or could not run (None)."""
    root = local_root(checkpoint)
    if root is not None:
        _say_ready(root, version, master, warm)


def ready_standby(checkpoint: str) -> dict | None:
    """The standby that said it is ready (its line), if any: whether it is still alive is its
    master's to say."""
    return _read_line(checkpoint, STANDBY_FILE)


def describe(found: dict | None) -> str:
    if not found:
        return "another driver"
    since = found.get("since_ms")
    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(since / 1000)) if isinstance(since, int) else "?"
    return (
        f"the driver of version {found.get('version', '?')} on {found.get('master', '?')} "
        f"(pid {found.get('pid', '?')}, since {when})"
    )


def take(
    checkpoint: str,
    *,
    version: int | None,
    master: str | None,
    out=sys.stderr,
    warm=None,
    standby: bool = False,
    stop: threading.Event | None = None,
    poll_s: float = POLL_S,
    first_wait_s: float = FIRST_DRIVER_WAIT_S,
) -> Lease | None:
    """The checkpoint's lease, waiting while another driver holds it (this driver is then a
    standby: `warm()` is called once, before the wait, to get everything but the query ready; a
    driver that takes the lease at once does not call it).
    Raises Fenced when the checkpoint's fence excludes `version`; None for a remote checkpoint."""
    root = local_root(checkpoint)
    if root is None:
        return None
    if standby and _excluded(root, version):
        _follow_handoff(root, version, stop, poll_s)  # a promoted standby started again (--supervise)
    fd = _open_lease(root)
    started = time.monotonic()
    try:
        if standby:
            # submitted beside its version's first driver: let that one take the lease first (the
            # registry names it the dagger's driver), unless it has not within first_wait_s
            if warm is not None:
                warm()
                warm = None
            _say_ready(root, version, master)
            while not _taken_by(checkpoint, version) and time.monotonic() - started < first_wait_s:
                if stop is not None and stop.is_set():
                    raise Fenced("stopped while waiting for the lease")
                if _excluded(root, version):
                    _follow_handoff(root, version, stop, poll_s)
                time.sleep(poll_s)
        waited = False
        while True:
            # a fenced standby never takes the lease: the driver it replaced may just have let it
            # go, and the tooling waits for the lease to be free (operations._left_by_fence)
            if standby and _excluded(root, version):
                _follow_handoff(root, version, stop, poll_s)
            if _try_lock(fd):
                break
            if not waited:
                waited = True
                print(
                    f"run: standby: {describe(holder(checkpoint))} holds {checkpoint}; this driver takes over "
                    "when it is gone",
                    file=out,
                    flush=True,
                )
                if warm is not None:
                    warm()
                    _say_ready(root, version, master)
                    warm = None
            if stop is not None and stop.is_set():
                raise Fenced("stopped while waiting for the lease")
            time.sleep(poll_s)
        if waited:
            print(
                f"run: standby: took over {checkpoint} after {time.monotonic() - started:.1f} s", file=out, flush=True
            )
        fence_at = read_fence(root)
        if fence_at is not None and version is not None and version < fence_at:
            if standby:  # fenced between the check and the lock: let it go, then as above
                fcntl.flock(fd, fcntl.LOCK_UN)
                _follow_handoff(root, version, stop, poll_s)
            raise Fenced(
                f"version {version} of this dagger was stopped or replaced (the checkpoint {checkpoint} "
                f"takes version {fence_at} or later): this driver ends without writing"
            )
        line = (
            json.dumps(
                {
                    "pid": os.getpid(),
                    "host": socket.gethostname(),
                    "master": master,
                    "version": version,
                    "since_ms": int(time.time() * 1000),
                },
                sort_keys=True,
            )
            + "\n"
        )
        os.ftruncate(fd, 0)
        os.pwrite(fd, line.encode(), 0)
    except BaseException:
        os.close(fd)
        raise
    return Lease(root, fd, version, time.monotonic() - started)
