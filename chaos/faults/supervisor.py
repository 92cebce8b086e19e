"""The lab's supervisord, through supervisor's own XML-RPC client on its unix socket.

Not supervisorctl's output: its text is for people and changes between versions, while the RPC
interface gives states, pids and error codes as data.
"""

from __future__ import annotations

import configparser
import time
import xmlrpc.client
from pathlib import Path

from supervisor.xmlrpc import Faults as RpcCodes
from supervisor.xmlrpc import SupervisorTransport

from .errors import FaultError

RUNNING = "RUNNING"
# states in which supervisord has no process and will not start one by itself
DOWN_STATES = ("STOPPED", "EXITED", "FATAL")


def socket_url(conf: Path) -> str:
    """The `unix://` URL supervisorctl would use, read from supervisord.conf."""
    parser = configparser.ConfigParser(defaults={"here": str(conf.parent)})  # supervisor's %(here)s
    try:
        with conf.open() as f:
            parser.read_file(f)
    except (OSError, configparser.Error) as e:
        raise FaultError(f"cannot read the lab's supervisord config {conf}: {e}") from None
    if parser.has_option("supervisorctl", "serverurl"):
        url = parser.get("supervisorctl", "serverurl")
        if url.startswith("unix://"):
            return url
    if parser.has_option("unix_http_server", "file"):
        return "unix://" + parser.get("unix_http_server", "file")
    raise FaultError(
        f"{conf} names no unix socket ([unix_http_server] file): the faults talk to supervisord only through it"
    )


class Supervisor:
    def __init__(self, conf: Path):
        self.conf = conf
        self.url = socket_url(conf)
        self._proxy = None
        self._config: dict[str, dict] | None = None

    def _rpc(self):
        if self._proxy is None:
            # the host part of the URL is ignored: the transport connects to the socket
            transport = SupervisorTransport(None, None, self.url)
            self._proxy = xmlrpc.client.ServerProxy("http://127.0.0.1", transport=transport)
        return self._proxy.supervisor

    def _call(self, method: str, *args):
        try:
            return getattr(self._rpc(), method)(*args)
        except xmlrpc.client.Fault:
            raise
        except (OSError, xmlrpc.client.ProtocolError) as e:
            self._proxy = None  # a fresh connection next time (supervisord may have restarted)
            raise FaultError(f"supervisord at {self.url} does not answer ({e}): is the lab up?") from None

    def info(self, program: str) -> dict:
        try:
            return self._call("getProcessInfo", program)
        except xmlrpc.client.Fault as e:
            if e.faultCode == RpcCodes.BAD_NAME:
                raise FaultError(f"supervisord has no program {program!r}") from None
            raise FaultError(f"supervisord: {program}: {e.faultString}") from None

    def state(self, program: str) -> str:
        return self.info(program)["statename"]

    def pid(self, program: str) -> int | None:
        info = self.info(program)
        return (info["pid"] or None) if info["statename"] in ("RUNNING", "STARTING", "STOPPING") else None

    def config(self, program: str) -> dict:
        """The program's settings as supervisord loaded them (command, directory, autorestart...)."""
        if self._config is None:
            self._config = {c["name"]: c for c in self._call("getAllConfigInfo")}
        if program not in self._config:
            raise FaultError(f"supervisord has no program {program!r}")
        return self._config[program]

    def start(self, program: str) -> None:
        """Ask supervisord to start the program and return at once; started or starting is fine."""
        try:
            self._call("startProcess", program, False)
        except xmlrpc.client.Fault as e:
            if e.faultCode != RpcCodes.ALREADY_STARTED:
                raise FaultError(f"supervisord could not start {program}: {e.faultString}") from None

    def stop(self, program: str) -> None:
        """Ask supervisord to stop the program (its stop signal, then SIGKILL after stopwaitsecs) and
        return at once; a program that does not run is fine."""
        try:
            self._call("stopProcess", program, False)
        except xmlrpc.client.Fault as e:
            if e.faultCode != RpcCodes.NOT_RUNNING:
                raise FaultError(f"supervisord could not stop {program}: {e.faultString}") from None

    def wait(self, programs: list[str], states: tuple[str, ...], timeout_s: float) -> dict[str, str]:
        """Poll until every program is in one of `states`; the programs that are not, with their
        state, at the timeout (empty when all are)."""
        deadline = time.monotonic() + timeout_s
        while True:
            current = {p: self.state(p) for p in programs}
            off = {p: s for p, s in current.items() if s not in states}
            if not off or time.monotonic() > deadline:
                return off
            time.sleep(0.1)
