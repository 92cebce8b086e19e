"""Render an HTML file in headless Chromium (Debian's `chromium`, installed by `python -m lab.packages`):
the DOM after load, the page's console messages, and a screenshot on request.

    rendered = render("out/drills/<run>/report.html", screenshot="report.png")
    rendered.dom, rendered.console_errors, rendered.screenshot

What Chromium prints (Chromium 156, `--headless=new --enable-logging=stderr --v=0`): every console
message of a web page goes to stderr at INFO level, whatever its level, as

    [pid:tid:MMDD/HHMMSS.micros:INFO:CONSOLE:<line>] "<message>", source: <url> (<line>)

`console.error('x')` prints `"x"`, an uncaught exception `"Uncaught Error: boom"` (a rejected promise
`"Uncaught (in promise) Error: ..."`), and a message with newlines continues on the following
stderr lines. Chromium's own lines (`ERROR:dbus/bus.cc`, `WARNING:vaapi...`, the Debian wrapper's
shell noise) are not the page's and are ignored. Since the level cannot be told apart, and a
report runs no script at all, every console message of the page is returned in `console_errors`.
A resource that fails to load (an external image) prints nothing: self-containment is checked on
the HTML itself.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

BINARIES = ("chromium", "chromium-browser", "google-chrome")
FLAGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--enable-logging=stderr",
    "--v=0",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-extensions",
    "--hide-scrollbars",
    "--disable-background-networking",
    "--disable-component-update",
    "--mute-audio",
]
TIMEOUT_SECONDS = 90

# the start of a log line of the page's console; older Chromiums print CONSOLE(<line>)
_CONSOLE = re.compile(r'^\[[\d:./]+:[A-Z]+:CONSOLE(?::\d+|\(\d+\))\] "(?P<rest>.*)$')
_SOURCE = re.compile(r'^(?P<text>.*)", source: (?P<source>.*) \((?P<line>\d+)\)$', re.S)
_LOG_LINE = re.compile(r"^\[\d+:\d+:\d{4}/\d{6}\.\d+:")


class BrowserError(RuntimeError):
    pass


@dataclass
class Rendered:
    dom: str  # the serialised DOM after load (--dump-dom)
    console_errors: list[str]  # "<source>:<line>: <message>", the page's console, in order
    screenshot: Path | None = None  # the PNG, when asked for
    stderr: str = field(default="", repr=False)  # Chromium's whole log, for a failure's message


def chromium() -> str:
    """The Chromium binary; BrowserError with how to install it when there is none."""
    for name in BINARIES:
        found = shutil.which(name)
        if found:
            return found
    raise BrowserError(
        "no chromium on PATH: install Debian's chromium (python -m lab.packages, as root, "
        "or apt-get install -y chromium)"
    )


def parse_console(stderr: str) -> list[str]:
    """The page's console messages in Chromium's stderr, as "<source>:<line>: <message>"."""
    messages: list[str] = []
    pending: list[str] | None = None

    def finish(parts: list[str]) -> None:
        text = "\n".join(parts)
        m = _SOURCE.match(text)
        messages.append(f"{m['source']}:{m['line']}: {m['text']}" if m else text.rstrip('"'))

    for line in stderr.splitlines():
        start = _CONSOLE.match(line)
        if start:
            if pending is not None:
                finish(pending)
            pending = [start["rest"]]
        elif pending is not None:
            if _LOG_LINE.match(line):  # a new log line ends a message that never closed
                finish(pending)
                pending = None
                continue
            pending.append(line)
        else:
            continue
        if pending is not None and _SOURCE.match("\n".join(pending)):
            finish(pending)
            pending = None
    if pending is not None:
        finish(pending)
    return messages


def _run(args: list[str], user_data_dir: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, DBUS_SESSION_BUS_ADDRESS="disabled:", HOME=user_data_dir)
    try:
        return subprocess.run(
            [chromium(), *FLAGS, f"--user-data-dir={user_data_dir}", *args],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_SECONDS,
            env=env,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as e:
        raise BrowserError(f"chromium did not finish in {TIMEOUT_SECONDS} s: {' '.join(args)}") from e


def render(html_path: str | Path, screenshot: str | Path | None = None, *, window_size: str = "1280,2000") -> Rendered:
    """Load a local HTML file in headless Chromium: its DOM and console messages; with `screenshot`,
    also a PNG of the first `window_size` pixels (a second Chromium run)."""
    path = Path(html_path).resolve()
    if not path.is_file():
        raise BrowserError(f"{path}: no such file")
    url = path.as_uri()
    with tempfile.TemporaryDirectory(prefix="chromium-") as profile:
        proc = _run(["--dump-dom", url], profile)
        if proc.returncode != 0 or not proc.stdout.strip():
            raise BrowserError(f"chromium --dump-dom {url} failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
        rendered = Rendered(dom=proc.stdout, console_errors=parse_console(proc.stderr), stderr=proc.stderr)
        if screenshot is not None:
            shot = Path(screenshot).resolve()
            shot.parent.mkdir(parents=True, exist_ok=True)
            shot.unlink(missing_ok=True)
            proc = _run([f"--screenshot={shot}", f"--window-size={window_size}", url], profile)
            if proc.returncode != 0 or not shot.is_file():
                raise BrowserError(
                    f"chromium --screenshot {url} failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}"
                )
            rendered.screenshot = shot
            rendered.stderr += proc.stderr
    return rendered


__all__ = ["render", "Rendered", "parse_console", "chromium", "BrowserError"]
