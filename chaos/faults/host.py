"""The host-level tools the disk and network faults act through: mount(8), nft(8) and tc(8).

Each call is an argument list (no shell); every path and name that reaches one has passed an
allow-list first, and the nft ruleset is written as JSON (nft -j), never pasted together as text.
These need root (CAP_SYS_ADMIN for mounts, CAP_NET_ADMIN for nft and tc), as the lab's faults do.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

from .errors import FaultError

# what may reach an overlayfs option string or a mount point: its options are split on ',' and
# ':' and a few other characters have meanings, so a path outside this set is refused
SAFE_PATH = re.compile(r"/[A-Za-z0-9_./+-]*")
SAFE_NAME = re.compile(r"[a-z][a-z0-9_]{0,62}")


def tool(name: str) -> str:
    """The path of a host tool, or a FaultError that says which Debian package has it."""
    package = {"nft": "nftables", "tc": "iproute2", "mount": "mount", "umount": "mount"}[name]
    found = shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin:/usr/bin:/bin")
    if not found:
        raise FaultError(f"{name} is not installed (Debian package {package}; `python -m lab.packages` installs it)")
    return found


def run(name: str, *args: str, stdin: str | None = None) -> str:
    """Run a host tool; its stdout, or a FaultError with the command and what it said."""
    command = [tool(name), *args]
    try:
        done = subprocess.run(command, input=stdin, capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        raise FaultError(f"{' '.join(command)} did not finish in 30 s") from None
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        raise FaultError(f"{' '.join(command)} failed: {said[-1] if said else f'exit code {done.returncode}'}")
    return done.stdout


def safe_path(path: str | Path) -> str:
    text = os.path.realpath(path)
    if not SAFE_PATH.fullmatch(text):
        raise FaultError(f"{text!r}: a fault mounts only over paths of letters, digits and _ . / + -")
    return text


# --- mounts -----------------------------------------------------------------------------------


def _unescape(field: str) -> str:
    # /proc/self/mountinfo writes space, tab, newline and backslash as octal escapes
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def mounts_at(path: str | Path) -> list[dict]:
    """The mounts stacked on `path` (bottom first): mount id, filesystem type, options."""
    target = os.path.realpath(path)
    found = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            sep = fields.index("-")
            if _unescape(fields[4]) == target:
                found.append(
                    {"id": int(fields[0]), "fstype": fields[sep + 1], "options": fields[5], "source": fields[sep + 2]}
                )
    return found


def unmount_all(path: str | Path, *, fstypes: tuple[str, ...]) -> int:
    """Unmount what a fault stacked on `path`, top first, only while the top is of `fstypes` (so
    a mount someone else made there stays). How many were unmounted."""
    count = 0
    while (stack := mounts_at(path)) and stack[-1]["fstype"] in fstypes:
        run("umount", os.path.realpath(path))
        count += 1
    return count


# --- nftables ---------------------------------------------------------------------------------


def nft_apply(commands: list[dict]) -> None:
    run("nft", "-j", "-f", "-", stdin=json.dumps({"nftables": commands}))


def nft_table_exists(family: str, name: str) -> bool:
    if not SAFE_NAME.fullmatch(name):
        raise FaultError(f"not an nft table name this project makes: {name!r}")
    out = run("nft", "-j", "list", "tables", family)
    return any(item.get("table", {}).get("name") == name for item in json.loads(out or '{"nftables": []}')["nftables"])


def nft_delete_table(family: str, name: str) -> None:
    if nft_table_exists(family, name):
        nft_apply([{"delete": {"table": {"family": family, "name": name}}}])


# --- tc ---------------------------------------------------------------------------------------


def root_qdisc(dev: str) -> dict | None:
    """The device's root qdisc as `tc -j` gives it, None when it has none (noqueue)."""
    for q in json.loads(run("tc", "-j", "qdisc", "show", "dev", dev) or "[]"):
        if q.get("root") and q.get("kind") not in ("noqueue",):
            return q
    return None


def classes(dev: str, handle: str) -> list[str]:
    """The class ids under a qdisc (`tc class show` prints no JSON for htb here)."""
    out = run("tc", "class", "show", "dev", dev, "parent", handle)
    return re.findall(r"^class \S+ (\S+) ", out, flags=re.M)
