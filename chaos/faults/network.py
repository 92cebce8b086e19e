"""Brokers cut off their clients, or their client traffic slowed to a congested link's bandwidth.

The lab's brokers serve clients and each other on one loopback listener and talk to the KRaft
quorum on another; both faults act on the client listener's port only, on the loopback device
only, so the controller quorum still sees the broker (the classic partial partition: the cluster
thinks the broker is fine, clients cannot reach it, and followers stop fetching from its leaders).

- network-cut: an nftables table of this fault's own, dropping every loopback packet to or from
  the port (established connections hang, new ones time out: a partition, not a refusal).
- network-slow: an HTB class on the loopback device's root qdisc (made with this fault's handle
  when there is none) that the port's packets in both directions go through, at SLOW_RATE.
  This kernel has no netem, so the slowness is a narrow link's (queueing), not a fixed delay.

Undo deletes the table, or the filters and the class (and the root qdisc when no class of another
fault is left); each is recorded before it is made, so an undo after a crash finds it.
"""

from __future__ import annotations

import time

from . import host
from .base import require_running
from .errors import FaultError
from .kafka import BrokerFault

FAMILY = "inet"
QDISC = "dc:"  # the handle of the root qdisc the slow faults share ("dagger chaos")
DEV = "lo"
SLOW_RATE = "256kbit"  # a congested link: a few hundred small messages a second still pass
SLOW_BURST = "16k"


def ports(fault: BrokerFault) -> list[int]:
    members = {c.program: c for c in fault.lab.components()}
    out = []
    for program in fault.programs:
        host_, port = members[program].host_port
        if host_ not in ("127.0.0.1", "localhost", "::1"):
            raise FaultError(f"{program} serves on {host_}: the network faults act on loopback only")
        out.append(port)
    return out


class NetworkCut(BrokerFault):
    kind = "network-cut"

    @property
    def table(self) -> str:
        return f"dagger_chaos_cut_{min(self.params['ports'])}"

    def _inject(self) -> None:
        require_running(self._supervisor(), self.programs)
        self.params["ports"] = ports(self)
        if host.nft_table_exists(FAMILY, self.table):
            raise FaultError(f"nft table {FAMILY} {self.table} exists already (another network-cut?)")
        self.params["nft_table"] = self.table
        self._affect(self.programs)
        match_lo = {"match": {"op": "==", "left": {"meta": {"key": "iifname"}}, "right": DEV}}
        rules = []
        for field in ("dport", "sport"):
            rules.append(
                {
                    "add": {
                        "rule": {
                            "family": FAMILY,
                            "table": self.table,
                            "chain": "cut",
                            "expr": [
                                match_lo,
                                {
                                    "match": {
                                        "op": "==",
                                        "left": {"payload": {"protocol": "tcp", "field": field}},
                                        "right": {"set": self.params["ports"]},
                                    }
                                },
                                {"drop": None},
                            ],
                        }
                    }
                }
            )
        host.nft_apply(
            [
                {"add": {"table": {"family": FAMILY, "name": self.table}}},
                {
                    "add": {
                        "chain": {
                            "family": FAMILY,
                            "table": self.table,
                            "name": "cut",
                            "type": "filter",
                            "hook": "input",
                            "prio": -10,
                            "policy": "accept",
                        }
                    }
                },
                *rules,
            ]
        )
        self.injected_at = time.time()

    def _restore(self) -> None:
        table = self.params.get("nft_table")
        if table:
            host.nft_delete_table(FAMILY, table)


class NetworkSlow(BrokerFault):
    kind = "network-slow"

    def _inject(self) -> None:
        require_running(self._supervisor(), self.programs)
        self.params["ports"] = ports(self)
        self.params["rate"] = SLOW_RATE
        # the class id's minor and the filters' priority: the lowest port, unique on this host
        minor = f"{min(self.params['ports']):x}"
        self.params["tc_class"] = f"{QDISC}{minor}"
        self.params["tc_prio"] = min(self.params["ports"])
        self._affect(self.programs)
        root = host.root_qdisc(DEV)
        if root is None:
            self.params["tc_root_made"] = True
            self._changed()
            # unclassified packets (the rest of loopback) go out directly, unshaped: no default class
            host.run("tc", "qdisc", "add", "dev", DEV, "root", "handle", QDISC, "htb")
        elif root.get("handle") != QDISC or root.get("kind") != "htb":
            raise FaultError(
                f"{DEV} has a root qdisc of its own ({root.get('kind')} {root.get('handle')}): refusing to replace it"
            )
        if self.params["tc_class"] in host.classes(DEV, QDISC):
            raise FaultError(f"tc class {self.params['tc_class']} exists already (another network-slow?)")
        self._changed()
        host.run(
            "tc",
            "class",
            "add",
            "dev",
            DEV,
            "parent",
            QDISC,
            "classid",
            self.params["tc_class"],
            "htb",
            "rate",
            SLOW_RATE,
            "burst",
            SLOW_BURST,
        )
        for port in self.params["ports"]:
            for field in ("dport", "sport"):
                host.run(
                    "tc",
                    "filter",
                    "add",
                    "dev",
                    DEV,
                    "parent",
                    QDISC,
                    "protocol",
                    "ip",
                    "prio",
                    str(self.params["tc_prio"]),
                    "u32",
                    "match",
                    "ip",
                    field,
                    str(port),
                    "0xffff",
                    "flowid",
                    self.params["tc_class"],
                )
        self.injected_at = time.time()

    def _restore(self) -> None:
        klass = self.params.get("tc_class")
        root = host.root_qdisc(DEV)
        if not klass or root is None or root.get("handle") != QDISC:
            return
        # the filters first (a class with filters pointing at it cannot go), then the class
        run_quiet("tc", "filter", "del", "dev", DEV, "parent", QDISC, "prio", str(self.params["tc_prio"]))
        if klass in host.classes(DEV, QDISC):
            host.run("tc", "class", "del", "dev", DEV, "classid", klass)
        if not host.classes(DEV, QDISC):
            host.run("tc", "qdisc", "del", "dev", DEV, "root", "handle", QDISC)


def run_quiet(*command: str) -> None:
    """A delete that may find nothing to delete (an undo run twice, a crash before the add)."""
    try:
        host.run(*command)
    except FaultError as e:
        if "No such file" not in str(e) and "Cannot find" not in str(e) and "Invalid argument" not in str(e):
            raise
