"""dagger_stacks: the cloud VMs of the team stacks, as the roles in site.yml expect them.

Each team stack (infra/, one per infra/teams/<team>.yaml) exports `inventory`: Ansible's
dynamic-inventory JSON of its VMs in the stack's own vocabulary (spark_master, spark_workers,
kafka_mirror, mirror_maker, mirror_<source>). This plugin reads that output from Pulumi (or from
exported files) and maps it onto the groups and variables the plays and roles use.

Stack outputs come from team specs, which come from pull requests: every host name, group name and
variable is checked against an allow-list (names by regex, values by type and pattern) and anything
else stops the inventory with an error naming the stack, the field and the value. The strings
that pass are still marked unsafe, so Jinja never templates them.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import subprocess

import javaproperties
from ansible.errors import AnsibleParserError
from ansible.plugins.inventory import BaseInventoryPlugin
from ansible.utils.unsafe_proxy import wrap_var

DOCUMENTATION = r"""
name: dagger_stacks
short_description: The cloud VMs of the daggers team stacks (their Pulumi C(inventory) output)
description:
  - Reads the C(inventory) output of each team stack of the Pulumi project in C(infra/), either by running
    C(pulumi stack output --json --show-secrets=false) or from files exported by
    C(python -m infra.inventory_export), and maps it onto the groups the plays of C(site.yml) target.
  - "Groups: C(spark) with a child C(spark_<team>) per cluster (hosts carry C(spark_role) master or worker);
    C(kafka) > C(kafka_mirror) > C(kafka_<team>_<source>) per mirror cluster (hosts carry C(kafka_node_id));
    C(mirrormaker) > C(mirrormaker_<team>_<source>); C(team_<team>) holding every host of a team, for C(--limit)."
  - Stack outputs are untrusted (team specs come from pull requests). Host and group names must match an
    allow-list regex; only known variables are read, each type-checked and pattern-checked; anything else
    raises an error naming the stack, the field and the value. Strings are marked unsafe (never templated).
  - A team whose Spark runs on GKE has no VMs; its C(team_<team>) group is empty.
options:
  plugin:
    description: This plugin's name, so that C(auto) and C(ansible-inventory) find it.
    required: true
    choices: [dagger_stacks]
  stacks:
    description:
      - The team stacks to read (stack names, which are team names).
      - Empty means every team with a spec in C(<project_dir>/teams/).
    type: list
    elements: str
    default: []
    env:
      - name: DAGGER_STACKS
  project_dir:
    description:
      - The Pulumi project directory (C(Pulumi.yaml), C(teams/)); C(pulumi) runs there.
      - Unset means the repository's C(infra/) next to C(playbooks/). Relative paths are from the current directory.
    type: path
    env:
      - name: DAGGER_STACKS_PROJECT_DIR
  export_dir:
    description:
      - When set, read each stack's outputs from C(<export_dir>/<stack>.json) (as written by
        C(python -m infra.inventory_export --out DIR)) instead of running C(pulumi).
      - Relative paths are from the current directory.
    type: path
    env:
      - name: DAGGER_STACKS_EXPORT_DIR
  pulumi_command:
    description: The Pulumi CLI to run (never through a shell).
    type: str
    default: pulumi
    env:
      - name: DAGGER_STACKS_PULUMI
  pulumi_organization:
    description: The Pulumi organization of the stacks (C(organization) on a self-managed backend).
    type: str
    default: organization
    env:
      - name: DAGGER_STACKS_PULUMI_ORGANIZATION
  pulumi_project:
    description: The Pulumi project name (C(name) in C(Pulumi.yaml)).
    type: str
    default: daggers
  pulumi_timeout:
    description: Seconds one C(pulumi stack output) may take.
    type: int
    default: 120
"""

EXAMPLES = r"""
# inventories/cloud/dagger_stacks.yml: every team stack, from Pulumi
plugin: dagger_stacks

# one team only, from files exported under Pulumi's mocks:
#   python -m infra.inventory_export --out /tmp/stacks fraud
#   DAGGER_STACKS_EXPORT_DIR=/tmp/stacks ansible-inventory -i inventories/cloud/dagger_stacks.yml --list
#   ansible-playbook -i inventories/cloud site.yml --limit team_fraud
"""

# -- what is allowed in a stack's output -----------------------------------------------------------

TEAM = re.compile(r"^[a-z][a-z0-9-]{1,18}[a-z0-9]$")  # infra/schema/team.schema.json
HOST = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")  # a Compute Engine instance name
SOURCE = re.compile(r"^[a-z][a-z0-9-]{0,40}[a-z0-9]$")  # a shared Kafka cluster's name
MIRROR_GROUP = re.compile(r"^mirror_[a-z][a-z0-9_]{0,40}[a-z0-9]$")
FIXED_GROUPS = ("spark_master", "spark_workers", "kafka_mirror", "mirror_maker")
GROUP_KEYS = ("hosts", "vars", "children")
OUT_GROUP = re.compile(r"^[a-z][a-z0-9_]{0,127}$")  # every group this plugin makes
JINJA = re.compile(r"\{\{|\{%|\{#")
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")  # newlines only where text is allowed
MAX_EXPORT_BYTES = 8 * 1024 * 1024

_ADDRESS = r"[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?"
_PORT = r"[0-9]{1,5}"


def _pattern(regex):
    compiled = re.compile(regex)

    def check(value):
        if not isinstance(value, str) or not compiled.fullmatch(value):
            return f"must be a string matching {regex}"
        return None

    return check


def _int(low, high):
    def check(value):
        # bool is an int in Python: a `true` is not a port
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            return f"must be an integer from {low} to {high}"
        return None

    return check


def _private_ipv4(value):
    try:
        address = ipaddress.IPv4Address(value) if isinstance(value, str) else None
    except ValueError:
        address = None
    if (
        address is None
        or not address.is_private
        or address.is_loopback
        or address.is_link_local
        or address.is_unspecified
    ):
        return "must be a private IPv4 address (the VM's internal IP)"
    return None


def _text(value):
    if not isinstance(value, str) or len(value) > 65536 or CONTROL.search(value):
        return "must be text without control characters, up to 64 KiB"
    return None


PORT = _int(1, 65535)
SERVERS = _pattern(rf"^{_ADDRESS}:{_PORT}(,{_ADDRESS}:{_PORT})*$")
# the variables a stack may set, by where it sets them; none of them is an ansible_* connection
# setting except ansible_host, which must be a private address
ALLOWED_VARS = {
    "all": {
        "daggers_team": _pattern(TEAM.pattern),
        "daggers_tier": _pattern(r"^[a-z]{1,32}$"),
        "daggers_checkpoint_url": _pattern(r"^gs://[a-z0-9][a-z0-9._-]{1,220}[a-z0-9](/[A-Za-z0-9._-]+)*/?$"),
    },
    "spark_master": {"spark_master_port": PORT, "spark_master_ui_port": PORT},
    "spark_workers": {
        "spark_master_url": _pattern(rf"^spark://{_ADDRESS}:{_PORT}$"),
        "spark_worker_cores": _int(1, 1024),
        "spark_worker_memory_gb": _int(1, 65536),
        "spark_worker_port": PORT,
        "spark_worker_ui_port": PORT,
    },
    "kafka_mirror": {},
    "mirror_maker": {},
    "mirror": {
        "kafka_mirror_source_alias": _pattern(SOURCE.pattern),
        "kafka_mirror_cluster_id": _pattern(r"^[A-Za-z0-9_-]{22}$"),
        "kafka_mirror_controller_quorum_voters": _pattern(rf"^\d+@{_ADDRESS}:{_PORT}(,\d+@{_ADDRESS}:{_PORT})*$"),
        "kafka_mirror_bootstrap_servers": SERVERS,
        "kafka_mirror_replication_factor": _int(1, 16),
        "mirror_maker_properties": _text,
    },
    "host": {"ansible_host": _private_ipv4, "internal_ip": _private_ipv4, "kafka_mirror_node_id": _int(0, 9999)},
}
# values read out of mirror_maker_properties
TOPICS = _pattern(r"^[A-Za-z0-9._\-*+?|()\[\]^$\\{}, ]{1,4000}$")
JAVA_CLASS = _pattern(r"^[A-Za-z_][A-Za-z0-9_$]*(\.[A-Za-z_][A-Za-z0-9_$]*)+$")


def is_mirror_group(group):
    """mirror_<source>: one per mirrored shared cluster (mirror_maker is not one)."""
    return isinstance(group, str) and group not in FIXED_GROUPS and bool(MIRROR_GROUP.fullmatch(group))


def token(name):
    """A team or cluster name as a group-name fragment (groups take letters, digits, underscores)."""
    return name.replace("-", "_")


class StackError(AnsibleParserError):
    """A stack's output that is refused: says which stack, which field, which value."""

    def __init__(self, stack, field, value, why):
        shown = repr(value)
        shown = shown if len(shown) <= 120 else shown[:117] + "..."
        super().__init__(f"dagger_stacks: stack {stack!r}: {field}: {why} (got {shown})")


# -- reading one stack's output -------------------------------------------------------------------


class StackInventory:
    """One stack's `inventory` output, checked: its hosts, their vars and the groups' vars."""

    def __init__(self, stack, raw):
        self.stack = stack
        self.group_vars = {}  # input group -> {var: value}
        self.group_hosts = {}  # input group -> [host]
        self.host_vars = {}  # host -> {var: value}
        if raw is None:  # a GKE team: no VMs
            return
        self._require(isinstance(raw, dict), "inventory", raw, "must be a mapping (Ansible's dynamic-inventory JSON)")
        for group, body in raw.items():
            if group != "_meta":
                self._read_group(group, body)
        self._read_meta(raw.get("_meta", {}))  # after the groups: a bad host is reported where it is listed
        listed = {h for hosts in self.group_hosts.values() for h in hosts}
        for host in self.host_vars:
            self._require(host in listed, f"inventory._meta.hostvars.{host}", host, "host is in no group")
        for host in sorted(listed):
            where = f"inventory._meta.hostvars.{host}.ansible_host"
            self._require("ansible_host" in self.host_vars.get(host, {}), where, None, "missing")

    def _require(self, ok, field, value, why):
        if not ok:
            raise StackError(self.stack, field, value, why)

    def _check_var(self, where, kind, name, value):
        self._require(isinstance(name, str) and name in ALLOWED_VARS[kind], where, name, "variable not allowed")
        self._check_value(f"{where}.{name}", value, ALLOWED_VARS[kind][name])
        return value

    def _check_value(self, where, value, check):
        why = check(value)
        self._require(why is None, where, value, why)
        found = JINJA.search(value) if isinstance(value, str) else None
        # shown from the template on: in a long text the refused part is what the reader needs
        self._require(
            found is None, where, value[max(0, found.start() - 20) :] if found else value, "templating is not allowed"
        )

    def _read_meta(self, body):
        self._require(
            isinstance(body, dict) and set(body) <= {"hostvars"},
            "inventory._meta",
            body,
            "must be a mapping with hostvars only",
        )
        hostvars = body.get("hostvars", {})
        self._require(isinstance(hostvars, dict), "inventory._meta.hostvars", hostvars, "must be a mapping")
        for host, variables in hostvars.items():
            where = f"inventory._meta.hostvars.{host}"
            self._check_host(where, host)
            self._require(isinstance(variables, dict), where, variables, "must be a mapping")
            self.host_vars[host] = {
                name: self._check_var(where, "host", name, value) for name, value in variables.items()
            }

    def _check_host(self, where, host):
        self._require(
            isinstance(host, str) and bool(HOST.fullmatch(host)),
            where,
            host,
            f"host name not allowed (must match {HOST.pattern})",
        )
        # a stack names only its own team's VMs, so it cannot take over another team's host
        prefix = f"dagger-{self.stack}-"
        self._require(host.startswith(prefix), where, host, f"host name must start with {prefix!r}")

    def _read_group(self, group, body):
        where = f"inventory.{group}"
        known = group == "all" or group in FIXED_GROUPS or is_mirror_group(group)
        self._require(bool(known), where, group, "group not allowed")
        self._require(
            isinstance(body, dict) and set(body) <= set(GROUP_KEYS),
            where,
            body,
            f"must be a mapping of {', '.join(GROUP_KEYS)}",
        )
        hosts, children = body.get("hosts", []), body.get("children", [])
        self._require(isinstance(hosts, list), f"{where}.hosts", hosts, "must be a list")
        self._require(isinstance(children, list), f"{where}.children", children, "must be a list")
        for i, host in enumerate(hosts):
            self._check_host(f"{where}.hosts[{i}]", host)
        for i, child in enumerate(children):
            ok = child in FIXED_GROUPS or is_mirror_group(child)
            self._require(group == "all" and bool(ok), f"{where}.children[{i}]", child, "child group not allowed")
        self._require(group != "all" or not hosts, f"{where}.hosts", hosts, "hosts must be in a group")
        variables = body.get("vars", {})
        self._require(isinstance(variables, dict), f"{where}.vars", variables, "must be a mapping")
        kind = "mirror" if is_mirror_group(group) else group
        self.group_vars[group] = {
            name: self._check_var(f"{where}.vars", kind, name, value) for name, value in variables.items()
        }
        if group != "all":
            self.group_hosts[group] = list(hosts)


def mirror_maker_settings(stack, group, text, source):
    """(topics, replication policy, source bootstrap servers) from the stack's mm2.properties text.

    Read by javaproperties with java.util.Properties' rules (escapes, continuations, comments), as
    MirrorMaker itself reads the file: a value cannot hide a second setting from this reader.
    """
    where = f"inventory.{group}.vars.mirror_maker_properties"
    try:
        props = javaproperties.loads(text)
    except (ValueError, UnicodeError) as e:
        raise StackError(stack, where, text, f"not a Java properties file ({e})") from None
    clusters = [c.strip() for c in props.get("clusters", "").split(",")]
    if len(clusters) != 2 or source not in clusters:
        raise StackError(stack, f"{where}: clusters", props.get("clusters"), f"must be {source} and one target")
    target = clusters[1 - clusters.index(source)]
    # one way: the mirror never replicates back into the shared cluster
    back = props.get(f"{target}->{source}.enabled", "false")
    if back.strip().lower() != "false":
        raise StackError(stack, f"{where}: {target}->{source}.enabled", back, "must be false (one way only)")
    found = {}
    for key, check in (
        (f"{source}->{target}.topics", TOPICS),
        ("replication.policy.class", JAVA_CLASS),
        (f"{source}.bootstrap.servers", SERVERS),
    ):
        value = props.get(key)
        why = check(value) or (JINJA.search(value) and "templating is not allowed")
        if why:
            raise StackError(stack, f"{where}: {key}", value, why)
        found[key] = value
    return tuple(found.values())


# -- the plugin ------------------------------------------------------------------------------------


class InventoryModule(BaseInventoryPlugin):
    NAME = "dagger_stacks"

    def verify_file(self, path):
        return super().verify_file(path) and path.endswith(("dagger_stacks.yml", "dagger_stacks.yaml"))

    def parse(self, inventory, loader, path, cache=True):
        super().parse(inventory, loader, path, cache)
        self._read_config_data(path)
        project_dir = self.get_option("project_dir") or os.path.join(
            os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "infra"
        )
        stacks = self.get_option("stacks") or sorted(
            name[:-5] for name in os.listdir(os.path.join(project_dir, "teams")) if name.endswith(".yaml")
        )
        owners = {}  # host -> the stack that declared it
        for stack in stacks:
            if not isinstance(stack, str) or not TEAM.fullmatch(stack):
                raise AnsibleParserError(f"dagger_stacks: stacks: {stack!r} is not a team stack name ({TEAM.pattern})")
            outputs = self._outputs(stack, project_dir)
            if not isinstance(outputs, dict):
                raise StackError(stack, "outputs", outputs, "must be a mapping of output names to values")
            checked = StackInventory(stack, outputs.get("inventory"))
            for host in checked.host_vars:
                if host in owners:
                    raise StackError(
                        stack,
                        f"inventory._meta.hostvars.{host}",
                        host,
                        f"host already declared by stack {owners[host]!r}",
                    )
                owners[host] = stack
            self._add_stack(checked)

    # -- outputs -----------------------------------------------------------------------------------
    def _outputs(self, stack, project_dir):
        export_dir = self.get_option("export_dir")
        if export_dir:
            return self._read_export(stack, os.path.join(export_dir, f"{stack}.json"))
        org, project = self.get_option("pulumi_organization"), self.get_option("pulumi_project")
        argv = [
            self.get_option("pulumi_command"),
            "stack",
            "output",
            "--json",
            "--show-secrets=false",
            "--non-interactive",
            "--stack",
            f"{org}/{project}/{stack}",
        ]
        try:
            result = subprocess.run(
                argv,
                cwd=project_dir,
                capture_output=True,
                text=True,
                check=False,
                timeout=self.get_option("pulumi_timeout"),
            )
        except (OSError, subprocess.TimeoutExpired) as e:
            raise AnsibleParserError(f"dagger_stacks: stack {stack!r}: {' '.join(argv)}: {e}") from e
        if result.returncode != 0:
            raise AnsibleParserError(
                f"dagger_stacks: stack {stack!r}: {' '.join(argv)} exited "
                f"{result.returncode}: {result.stderr.strip()[-2000:]}"
            )
        try:
            return json.loads(result.stdout)
        except ValueError as e:
            raise AnsibleParserError(f"dagger_stacks: stack {stack!r}: pulumi printed no JSON: {e}") from e

    def _read_export(self, stack, path):
        try:
            with open(path, "rb") as f:
                data = f.read(MAX_EXPORT_BYTES + 1)
        except OSError as e:
            raise AnsibleParserError(f"dagger_stacks: stack {stack!r}: cannot read its export: {e}") from e
        if len(data) > MAX_EXPORT_BYTES:
            raise AnsibleParserError(f"dagger_stacks: stack {stack!r}: {path} is larger than {MAX_EXPORT_BYTES} bytes")
        try:
            return json.loads(data)
        except ValueError as e:
            raise AnsibleParserError(f"dagger_stacks: stack {stack!r}: {path} is not JSON: {e}") from e

    # -- mapping onto site.yml's groups --------------------------------------------------------------
    def _group(self, name, parent=None, **variables):
        if not OUT_GROUP.fullmatch(name):
            raise AnsibleParserError(f"dagger_stacks: group name {name!r} not allowed ({OUT_GROUP.pattern})")
        self.inventory.add_group(name)
        if parent:
            self.inventory.add_child(self._group(parent), name)
        for key, value in variables.items():
            self.inventory.set_variable(name, key, wrap_var(value))
        return name

    def _host(self, host, group, **variables):
        self.inventory.add_host(host, group=group)
        for key, value in variables.items():
            self.inventory.set_variable(host, key, wrap_var(value))

    def _add_stack(self, s):
        team, t = s.stack, token(s.stack)
        common = s.group_vars.get("all", {})
        if common.get("daggers_team", team) != team:
            raise StackError(
                team, "inventory.all.vars.daggers_team", common["daggers_team"], "must be the stack's own team"
            )
        # team-wide vars live on the team's group, not on `all`: several stacks share one inventory
        team_group = self._group(
            f"team_{t}",
            dagger_host_kind="vm",
            daggers_team=team,
            **{k: v for k, v in common.items() if k in ("daggers_tier", "daggers_checkpoint_url")},
        )
        for host, hv in s.host_vars.items():
            self._host(host, team_group, ansible_host=hv["ansible_host"])
        self._add_spark(s, t)
        self._add_mirrors(s, t)

    def _add_spark(self, s, t):
        masters, workers = s.group_hosts.get("spark_master", []), s.group_hosts.get("spark_workers", [])
        if not masters and not workers:
            return
        if len(masters) != 1:
            raise StackError(s.stack, "inventory.spark_master.hosts", masters, "must be exactly one host")
        mv, wv = s.group_vars.get("spark_master", {}), s.group_vars.get("spark_workers", {})
        renamed = {
            "spark_master_port": mv.get("spark_master_port"),
            "spark_master_webui_port": mv.get("spark_master_ui_port"),
            "spark_worker_webui_port": wv.get("spark_worker_ui_port"),
            "spark_worker_cores": wv.get("spark_worker_cores"),
            # the whole machine's memory, as the stack gives it: no headroom for the OS and daemon
            "spark_worker_memory": f"{wv['spark_worker_memory_gb']}g" if "spark_worker_memory_gb" in wv else None,
        }
        cluster = self._group(
            f"spark_{t}",
            "spark",
            spark_cluster=t,
            spark_cluster_group=f"spark_{t}",
            **{k: v for k, v in renamed.items() if v is not None},
        )
        for role, hosts in (("master", masters), ("worker", workers)):
            for host in hosts:
                self._host(host, cluster, spark_role=role)

    def _add_mirrors(self, s, t):
        in_mirrors = set()
        for group in sorted(filter(is_mirror_group, s.group_hosts)):
            gv, where = s.group_vars.get(group, {}), f"inventory.{group}.vars"
            for name in ("kafka_mirror_source_alias", "kafka_mirror_replication_factor", "mirror_maker_properties"):
                if name not in gv:
                    raise StackError(s.stack, f"{where}.{name}", None, "missing")
            source, rf = gv["kafka_mirror_source_alias"], gv["kafka_mirror_replication_factor"]
            if f"mirror_{token(source)}" != group:
                raise StackError(s.stack, f"{where}.kafka_mirror_source_alias", source, f"does not name {group}")
            topics, policy, source_servers = mirror_maker_settings(
                s.stack, group, gv["mirror_maker_properties"], source
            )
            name = f"{t}_{token(source)}"
            kafka_group = self._group(
                f"kafka_{name}",
                "kafka_mirror",
                kafka_cluster=name,
                kafka_cluster_group=f"kafka_{name}",
                kafka_default_replication_factor=rf,
                # a write needs two in-sync replicas where there are three, else one
                kafka_min_insync_replicas=2 if rf >= 3 else 1,
            )
            self._group("kafka_mirror", "kafka")
            node_ids = {}
            for host in s.group_hosts[group]:
                node_id = s.host_vars[host].get("kafka_mirror_node_id")
                field = f"inventory._meta.hostvars.{host}.kafka_mirror_node_id"
                if node_id is None or node_id in node_ids:
                    raise StackError(s.stack, field, node_id, "missing or not unique in its cluster")
                node_ids[node_id] = host
                self._host(host, kafka_group, kafka_node_id=node_id)
                in_mirrors.add(host)
            # the shared source cluster is the platform's, not hosts of this inventory: an empty
            # group stands for it and its bootstrap servers reach mm2.properties as an extra setting
            source_group = self._group(f"shared_kafka_{token(source)}")
            mm_group = self._group(
                f"mirrormaker_{name}",
                "mirrormaker",
                mirrormaker_source=source,
                mirrormaker_source_group=source_group,
                mirrormaker_target=name,
                mirrormaker_target_group=kafka_group,
                mirrormaker_topics=topics,
                mirrormaker_replication_policy=policy,
                mirrormaker_replication_factor=rf,
                mirrormaker_extra_settings={f"{source}.bootstrap.servers": source_servers},
            )
            for host in s.group_hosts.get("mirror_maker", []):
                if host in s.group_hosts[group]:
                    self._host(host, mm_group)
        for group in ("kafka_mirror", "mirror_maker"):
            for i, host in enumerate(s.group_hosts.get(group, [])):
                if host not in in_mirrors:
                    raise StackError(
                        s.stack, f"inventory.{group}.hosts[{i}]", host, "host is in no mirror_<source> group"
                    )
