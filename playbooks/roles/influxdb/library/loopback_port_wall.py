#!/usr/bin/python
"""Ansible module: an nftables table of its own that lets only some local users connect to a
loopback TCP port (nftables' `meta skuid`, the uid of the socket that sends the SYN); anyone else
gets a TCP reset, as from a closed port.

For a server that listens on loopback and asks no login there: InfluxDB 1.x's backup and restore
RPC hands whoever connects every database and the users' password hashes (`influxd backup`), and
restores over them. Every local user reaches loopback, and on the lab a team's code runs as a
local user (its drivers as `dagger-spark`): this table is the wall.

The table is written whole as nft's JSON (`nft -j -f -`, a JSON writer, never pasted text), in one
transaction that deletes the table's old version: the wall is never down while it changes. It is
compared with what the kernel holds (`nft -j list table`) and left alone when they match. Needs
root (CAP_NET_ADMIN).
"""

from __future__ import annotations

import json
import re
import shutil

from ansible.module_utils.basic import AnsibleModule

DOCUMENTATION = r"""
module: loopback_port_wall
short_description: Only some local users may connect to a loopback port (an nftables table)
options:
  table: {type: str, required: true, description: "The inet table's name (letters, digits and _)."}
  port: {type: int, required: true, description: The TCP port on loopback.}
  allowed_uids: {type: list, elements: int, default: [0], description: The users that may connect.}
  state: {type: str, default: present, choices: [present, absent]}
"""

FAMILY = "inet"
CHAIN = "output"
TABLE = re.compile(r"[a-z][a-z0-9_]{0,62}")


def wanted_rule(port: int, uids: list[int]) -> list[dict]:
    """oifname "lo" tcp dport PORT meta skuid != {UIDS} reject with tcp reset"""
    allowed = uids[0] if len(uids) == 1 else {"set": sorted(uids)}
    return [
        {"match": {"op": "==", "left": {"meta": {"key": "oifname"}}, "right": "lo"}},
        {"match": {"op": "==", "left": {"payload": {"protocol": "tcp", "field": "dport"}}, "right": port}},
        {"match": {"op": "!=", "left": {"meta": {"key": "skuid"}}, "right": allowed}},
        {"reject": {"type": "tcp reset"}},
    ]


def ruleset(table: str, port: int, uids: list[int], replace: bool) -> dict:
    commands = []
    if replace:
        commands.append({"delete": {"table": {"family": FAMILY, "name": table}}})
    commands += [
        {"add": {"table": {"family": FAMILY, "name": table}}},
        {
            "add": {
                "chain": {
                    "family": FAMILY,
                    "table": table,
                    "name": CHAIN,
                    "type": "filter",
                    "hook": "output",
                    "prio": 0,
                    "policy": "accept",
                }
            }
        },
        {"add": {"rule": {"family": FAMILY, "table": table, "chain": CHAIN, "expr": wanted_rule(port, uids)}}},
    ]
    return {"nftables": [{"metainfo": {"json_schema_version": 1}}, *commands]}


def current(module: AnsibleModule, nft: str, table: str) -> list[dict] | None:
    """The table's chains and rules as nft lists them, or None when there is no such table."""
    rc, out, err = module.run_command([nft, "-j", "list", "table", FAMILY, table])
    if rc != 0:
        if "No such file or directory" in err or "does not exist" in err:
            return None
        module.fail_json(msg=f"nft list table {FAMILY} {table} failed: {err.strip() or rc}")
    return [item for item in json.loads(out)["nftables"] if "chain" in item or "rule" in item]


def same(found: list[dict], port: int, uids: list[int]) -> bool:
    chains = [item["chain"] for item in found if "chain" in item]
    rules = [item["rule"] for item in found if "rule" in item]
    if len(chains) != 1 or len(rules) != 1:
        return False
    chain = chains[0]
    if (chain.get("name"), chain.get("type"), chain.get("hook"), chain.get("prio"), chain.get("policy")) != (
        CHAIN,
        "filter",
        "output",
        0,
        "accept",
    ):
        return False
    return rules[0].get("chain") == CHAIN and rules[0].get("expr") == wanted_rule(port, uids)


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            table=dict(type="str", required=True),
            port=dict(type="int", required=True),
            allowed_uids=dict(type="list", elements="int", default=[0]),
            state=dict(type="str", default="present", choices=["present", "absent"]),
        ),
        supports_check_mode=True,
    )
    p = module.params
    table, port, uids = p["table"], p["port"], sorted(set(p["allowed_uids"]))
    if not TABLE.fullmatch(table):
        module.fail_json(msg=f"table {table!r}: lowercase letters, digits and _ only")
    if not 0 < port < 65536:
        module.fail_json(msg=f"port {port} is not a TCP port")
    if not uids or any(u < 0 for u in uids):
        module.fail_json(msg="allowed_uids: at least one uid, none negative")
    nft = shutil.which("nft") or shutil.which("nft", path="/usr/sbin:/sbin")
    if not nft:
        module.fail_json(msg="nft is not installed (Debian package nftables; `python -m lab.packages` installs it)")

    found = current(module, nft, table)
    if p["state"] == "absent":
        if found is None:
            module.exit_json(changed=False)
        if not module.check_mode:
            module.run_command([nft, "delete", "table", FAMILY, table], check_rc=True)
        module.exit_json(changed=True, msg=f"removed table {FAMILY} {table}")
    if found is not None and same(found, port, uids):
        module.exit_json(changed=False)
    if not module.check_mode:
        text = json.dumps(ruleset(table, port, uids, replace=found is not None))
        rc, _, err = module.run_command([nft, "-j", "-f", "-"], data=text, binary_data=True)
        if rc != 0:
            module.fail_json(msg=f"nft refused the table {FAMILY} {table}: {err.strip() or rc}")
        if not same(current(module, nft, table) or [], port, uids):
            module.fail_json(msg=f"nft holds another table {FAMILY} {table} than the one written")
    module.exit_json(changed=True, msg=f"table {FAMILY} {table}: only uids {uids} connect to 127.0.0.1:{port}")


if __name__ == "__main__":
    main()
