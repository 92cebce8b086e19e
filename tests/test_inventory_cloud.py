"""The cloud inventory: every team stack exported under Pulumi's mocks (python -m infra.inventory_export),
read by the real `ansible-inventory` through playbooks/inventory_plugins/dagger_stacks.py, and checked
against an independent reading of infra/teams/*.yaml (clusters, worker counts, ranges from the YAML
itself). Then the stack outputs are attacked the way a team's pull request could: each attack must
stop the inventory with an error naming the stack, the field and the value."""

from __future__ import annotations

import copy
import ipaddress
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from infra.tiers import MIRROR_BROKERS, SIZES, TIERS

REPO = Path(__file__).resolve().parent.parent
PLAYBOOKS = REPO / "playbooks"
CONFIG = PLAYBOOKS / "inventories" / "cloud" / "dagger_stacks.yml"
TEAMS_DIR = REPO / "infra" / "teams"
BIN = Path(sys.executable).parent
SPECS = {p.stem: yaml.safe_load(p.read_text()) for p in sorted(TEAMS_DIR.glob("*.yaml"))}


def group(name: str) -> str:
    return name.replace("-", "_")


def expected(spec: dict) -> dict:
    """What the YAML asks for (tier defaults where the YAML says nothing: infra/tiers.py's table)."""
    tier = TIERS[spec["tier"]]
    spark = {**tier["spark"], **spec.get("spark", {})}
    workers = spark.get("workers", SIZES[spark["size"]]["workers"])
    kafka = spec.get("kafka", tier["kafka"])
    return {
        "vm": spark["flavour"] == "vm",
        "workers": workers,
        "cidr": ipaddress.ip_network(spec["network"]["cidr"]),
        "mirrors": {k["cluster"]: k.get("topics") for k in kafka if k.get("mirrored")},
        "brokers": MIRROR_BROKERS[spec["tier"]],
    }


def ansible_env(export_dir: Path | None, **extra: str) -> dict[str, str]:
    env = {
        "PATH": f"{BIN}:/usr/bin:/bin",
        "HOME": str(Path.home()),
        "ANSIBLE_CONFIG": str(PLAYBOOKS / "ansible.cfg"),
        # a refused source must fail the command, not leave an empty inventory behind a warning
        "ANSIBLE_INVENTORY_UNPARSED_FAILED": "true",
        "ANSIBLE_NOCOLOR": "1",
    }
    if export_dir is not None:
        env["DAGGER_STACKS_EXPORT_DIR"] = str(export_dir)
    return {**env, **extra}


def ansible_inventory(export_dir: Path | None, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(BIN / "ansible-inventory"), "-i", str(CONFIG), "--list"],
        cwd=REPO,
        env=ansible_env(export_dir, **extra),
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("stacks")
    result = subprocess.run(
        [sys.executable, "-m", "infra.inventory_export", "--out", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    return out


def plain(value):
    """ansible-inventory's JSON without the unsafe markers ({"__ansible_unsafe": text} -> text)."""
    if isinstance(value, dict):
        if set(value) == {"__ansible_unsafe"}:
            return value["__ansible_unsafe"]
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


@pytest.fixture(scope="module")
def listed(exported) -> dict:
    result = ansible_inventory(exported)
    assert result.returncode == 0, result.stderr
    return plain(json.loads(result.stdout))


def squashed(text: str) -> str:
    """Text without whitespace: Ansible wraps its warnings at any width, even inside a hyphenated name."""
    return "".join(text.split())


def refused(result: subprocess.CompletedProcess, *parts: str) -> bool:
    return result.returncode != 0 and all(squashed(p) in squashed(result.stderr) for p in parts)


def hosts_of(inventory: dict, name: str) -> set[str]:
    """Hosts of a group and of its children, as Ansible resolves a pattern."""
    body = inventory.get(name, {})
    out = set(body.get("hosts", []))
    for child in body.get("children", []):
        out |= hosts_of(inventory, child)
    return out


# -- the exporter ---------------------------------------------------------------------------------


def test_the_exporter_writes_each_stack_outputs(exported):
    assert sorted(p.stem for p in exported.glob("*.json")) == sorted(SPECS)
    for team in SPECS:
        outputs = json.loads((exported / f"{team}.json").read_text())
        assert "inventory" in outputs and "spark_master_url" in outputs
        assert (outputs["inventory"] is not None) == expected(SPECS[team])["vm"]


def test_the_exporter_refuses_an_unknown_team(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "infra.inventory_export", "--out", str(tmp_path), "nosuch"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2 and "nosuch" in result.stderr
    assert not list(tmp_path.iterdir())


# -- the inventory, against the team specs ----------------------------------------------------------


@pytest.mark.parametrize("team", sorted(SPECS))
def test_each_team_has_a_group_of_exactly_its_vms(listed, team):
    want = expected(SPECS[team])
    members = hosts_of(listed, f"team_{group(team)}")
    assert f"team_{group(team)}" in listed["all"]["children"]
    if not want["vm"]:
        assert members == set()  # Spark on GKE: nothing for Ansible
        return
    assert len(members) == 1 + want["workers"] + want["brokers"] * len(want["mirrors"])
    for host in members:
        hv = listed["_meta"]["hostvars"][host]
        assert hv["dagger_host_kind"] == "vm" and hv["daggers_team"] == team
        assert ipaddress.ip_address(hv["ansible_host"]) in want["cidr"], (host, hv["ansible_host"])


@pytest.mark.parametrize("team", sorted(t for t in SPECS if expected(SPECS[t])["vm"]))
def test_spark_cluster_has_one_master_and_the_spec_workers(listed, team):
    want, name = expected(SPECS[team]), group(team)
    assert f"spark_{name}" in listed["spark"]["children"]
    hostvars = listed["_meta"]["hostvars"]
    roles = sorted(hostvars[h]["spark_role"] for h in hosts_of(listed, f"spark_{name}"))
    assert roles == ["master"] + ["worker"] * want["workers"]
    for host in hosts_of(listed, f"spark_{name}"):
        assert hostvars[host]["spark_cluster"] == name
        assert hostvars[host]["spark_cluster_group"] == f"spark_{name}"
        assert isinstance(hostvars[host]["spark_worker_cores"], int)


@pytest.mark.parametrize("team", sorted(t for t in SPECS if expected(SPECS[t])["vm"]))
def test_each_mirrored_cluster_is_a_kafka_mirror_cluster_and_a_mirrormaker_flow(listed, team):
    want, hostvars = expected(SPECS[team]), listed["_meta"]["hostvars"]
    assert want["mirrors"], "a vm team without a mirror tests nothing here"
    for source, topics in want["mirrors"].items():
        cluster = f"{group(team)}_{group(source)}"
        brokers = hosts_of(listed, f"kafka_{cluster}")
        assert f"kafka_{cluster}" in listed["kafka_mirror"]["children"]
        assert len(brokers) == want["brokers"]
        assert sorted(hostvars[h]["kafka_node_id"] for h in brokers) == list(range(want["brokers"]))
        assert {hostvars[h]["kafka_cluster"] for h in brokers} == {cluster}
        flow = hosts_of(listed, f"mirrormaker_{cluster}")
        assert flow == brokers and f"mirrormaker_{cluster}" in listed["mirrormaker"]["children"]
        for host in flow:
            hv = hostvars[host]
            assert (hv["mirrormaker_source"], hv["mirrormaker_target"]) == (source, cluster)
            assert hv["mirrormaker_target_group"] == f"kafka_{cluster}"
            assert hosts_of(listed, hv["mirrormaker_source_group"]) == set()  # the platform's, not ours
            assert f"{source}.bootstrap.servers" in hv["mirrormaker_extra_settings"]
            if topics:
                assert hv["mirrormaker_topics"] == ", ".join(topics)


def test_the_plays_of_site_yml_find_one_team_with_limit(exported):
    """`--limit team_<team>`: each play of site.yml gets that team's hosts of its group, nothing else."""
    team = next(t for t in sorted(SPECS) if expected(SPECS[t])["vm"])
    want = expected(SPECS[team])
    result = subprocess.run(
        [
            str(BIN / "ansible-playbook"),
            "-i",
            str(CONFIG),
            str(PLAYBOOKS / "site.yml"),
            "--list-hosts",
            "--limit",
            f"team_{group(team)}",
        ],
        cwd=REPO,
        env=ansible_env(exported),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    counts, play = {}, None
    for line in result.stdout.splitlines():
        line = line.strip()
        if line.startswith("pattern:"):
            play = line.split("'")[1]
        elif line.startswith("hosts (") and play:
            counts[play] = int(line[len("hosts (") : line.index(")")])
    site = yaml.safe_load((PLAYBOOKS / "site.yml").read_text())
    assert set(counts) == {p["hosts"] for p in site}
    brokers = want["brokers"] * len(want["mirrors"])
    cloud = {"kafka_mirror": brokers, "mirrormaker": brokers, "spark": 1 + want["workers"]}
    # every other play (the lab's supervisor, its primary Kafka, ...) has no cloud hosts
    assert counts == {**dict.fromkeys(counts, 0), **cloud}
    assert all(f"dagger-{team}-" in line for line in result.stdout.splitlines() if line.startswith("      "))


def test_ansible_doc_shows_the_plugin_options():
    result = subprocess.run(
        [str(BIN / "ansible-doc"), "-t", "inventory", "dagger_stacks"],
        cwd=REPO,
        env=ansible_env(None),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    for option in ("stacks", "export_dir", "project_dir", "pulumi_command", "DAGGER_STACKS_EXPORT_DIR"):
        assert option in result.stdout


def test_without_exports_it_asks_pulumi_with_an_argument_list(exported, tmp_path):
    """The cloud path: `pulumi stack output` in infra/, stack by fully qualified name, no shell."""
    fake = tmp_path / "pulumi"
    record = tmp_path / "calls.jsonl"
    fake.write_text(f"""#!{sys.executable}
import json, os, sys
with open({str(record)!r}, "a") as f:
    f.write(json.dumps({{"argv": sys.argv[1:], "cwd": os.getcwd()}}) + "\\n")
sys.stdout.write(open(os.path.join({str(exported)!r}, sys.argv[-1].rsplit("/", 1)[-1] + ".json")).read())
""")
    fake.chmod(0o755)
    result = ansible_inventory(None, DAGGER_STACKS_PULUMI=str(fake), DAGGER_STACKS="fraud,growth")
    assert result.returncode == 0, result.stderr
    calls = [json.loads(line) for line in record.read_text().splitlines()]
    assert [c["argv"] for c in calls] == [
        [
            "stack",
            "output",
            "--json",
            "--show-secrets=false",
            "--non-interactive",
            "--stack",
            f"organization/daggers/{s}",
        ]
        for s in ("fraud", "growth")
    ]
    assert {c["cwd"] for c in calls} == {str(REPO / "infra")}
    listed = json.loads(result.stdout)
    assert "team_growth" in listed["all"]["children"] and "team_api_health" not in listed["all"]["children"]


def test_every_string_reaches_ansible_marked_unsafe(exported):
    """ansible-inventory shows an unsafe string as {"__ansible_unsafe": ...}: no template in it would ever run."""
    result = ansible_inventory(exported)
    assert result.returncode == 0, result.stderr
    raw = json.loads(result.stdout)["_meta"]["hostvars"]

    def strings(value):
        if isinstance(value, dict) and set(value) == {"__ansible_unsafe"}:
            return []  # marked: fine
        if isinstance(value, dict):
            return [s for v in value.values() for s in strings(v)]
        return [value] if isinstance(value, str) else []

    assert raw and all(not strings(hv) for hv in raw.values()), [strings(hv) for hv in raw.values()]


# -- attacks through the stack outputs -------------------------------------------------------------


def _add_host(inv, name):
    inv["spark_workers"]["hosts"].append(name)
    inv["_meta"]["hostvars"][name] = {"ansible_host": "10.64.16.9"}


def _set(path, value):
    def attack(inv):
        *parents, last = path
        node = inv
        for key in parents:
            node = node[key]
        node[last] = value

    return attack


def _mm2(find, replace):
    def attack(inv):
        props = inv["mirror_esb_critical"]["vars"]["mirror_maker_properties"]
        assert find in props
        inv["mirror_esb_critical"]["vars"]["mirror_maker_properties"] = props.replace(find, replace)

    return attack


MASTER = "dagger-fraud-spark-master"
ATTACKS = {
    "host name with inventory syntax": (
        lambda inv: _add_host(inv, "x ansible_connection=local"),
        "inventory.spark_workers.hosts[6]",
        "x ansible_connection=local",
    ),
    "another team's host": (
        lambda inv: _add_host(inv, "dagger-growth-spark-master"),
        "inventory.spark_workers.hosts[6]",
        "dagger-growth-spark-master",
    ),
    "ssh arguments on a host": (
        _set(["_meta", "hostvars", MASTER, "ansible_ssh_common_args"], "-o ProxyCommand=sh"),
        f"inventory._meta.hostvars.{MASTER}",
        "ansible_ssh_common_args",
    ),
    "interpreter on a group": (
        _set(["spark_workers", "vars", "ansible_python_interpreter"], "/tmp/evil"),
        "inventory.spark_workers.vars",
        "ansible_python_interpreter",
    ),
    "connection for everyone": (
        _set(["all", "vars", "ansible_connection"], "local"),
        "inventory.all.vars",
        "ansible_connection",
    ),
    "become for everyone": (
        _set(["all", "vars", "ansible_become_exe"], "sh -c id"),
        "inventory.all.vars",
        "ansible_become_exe",
    ),
    "jinja in a value": (
        _set(["all", "vars", "daggers_checkpoint_url"], "gs://b/{{ lookup('pipe', 'id') }}"),
        "inventory.all.vars.daggers_checkpoint_url",
        "lookup('pipe', 'id')",
    ),
    "jinja in the mirrored topics": (
        _mm2("payment-.*", "{{ lookup('pipe', 'id') }}"),
        "inventory.mirror_esb_critical.vars.mirror_maker_properties",
        "{{ lookup('pipe', 'id') }}",
    ),
    "a quote in the mirrored topics": (
        _mm2("payment-.*", "payment-.*' x"),
        "mirror_maker_properties: esb-critical->local.topics",
        "payment-.*' x",
    ),
    "jinja statement in a comment of mm2.properties": (
        _mm2("# the mirror writes", "# {% raw %} the mirror writes"),
        "inventory.mirror_esb_critical.vars.mirror_maker_properties",
        "{% raw %}",
    ),
    "a group the lab plays target": (
        _set(["lab_supervisor"], {"hosts": [MASTER]}),
        "inventory.lab_supervisor",
        "lab_supervisor",
    ),
    "a group named with spaces": (_set(["spark x=1"], {"hosts": []}), "inventory.spark x=1", "spark x=1"),
    "a newline after a host name": (
        lambda inv: _add_host(inv, "dagger-fraud-spark-worker-9\n"),
        "inventory.spark_workers.hosts[6]",
        "dagger-fraud-spark-worker-9\\n",
    ),
    "a newline after a value": (
        _set(["all", "vars", "daggers_tier"], "critical\n"),
        "inventory.all.vars.daggers_tier",
        "critical\\n",
    ),
    "a public ansible_host": (
        _set(["_meta", "hostvars", MASTER, "ansible_host"], "8.8.8.8"),
        f"inventory._meta.hostvars.{MASTER}.ansible_host",
        "8.8.8.8",
    ),
    "a loopback ansible_host": (
        _set(["_meta", "hostvars", MASTER, "ansible_host"], "127.0.0.1"),
        f"inventory._meta.hostvars.{MASTER}.ansible_host",
        "127.0.0.1",
    ),
    "a boolean port": (
        _set(["spark_master", "vars", "spark_master_port"], True),
        "inventory.spark_master.vars.spark_master_port",
        "True",
    ),
    "a list where a count goes": (
        _set(["spark_workers", "vars", "spark_worker_cores"], [8]),
        "inventory.spark_workers.vars.spark_worker_cores",
        "[8]",
    ),
    "another team's name": (
        _set(["all", "vars", "daggers_team"], "growth"),
        "inventory.all.vars.daggers_team",
        "growth",
    ),
    "a secret instead of the inventory": (lambda inv: "[secret]", "inventory", "[secret]"),
}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_an_attack_through_the_outputs_is_refused_naming_the_field(exported, tmp_path, attack):
    change, field, value = ATTACKS[attack]
    outputs = json.loads((exported / "fraud.json").read_text())
    inventory = copy.deepcopy(outputs["inventory"])
    replaced = change(inventory)
    outputs["inventory"] = inventory if replaced is None else replaced
    (tmp_path / "fraud.json").write_text(json.dumps(outputs))
    result = ansible_inventory(tmp_path, DAGGER_STACKS="fraud")
    assert refused(result, "dagger_stacks: stack 'fraud':", field, value), result.stderr


def test_a_host_claimed_by_two_stacks_is_refused(exported, tmp_path):
    """Team names can share a prefix (fraud, fraud-x): the second stack to name a host is refused."""
    fraud = json.loads((exported / "fraud.json").read_text())
    other = copy.deepcopy(fraud)
    other["inventory"]["all"]["vars"]["daggers_team"] = "fraud-x"
    _add_host(fraud["inventory"], "dagger-fraud-x-spark-worker-9")
    _add_host(other["inventory"], "dagger-fraud-x-spark-worker-9")
    other["inventory"] = {k: v for k, v in other["inventory"].items() if k in ("all", "spark_workers", "_meta")}
    other["inventory"]["spark_workers"]["hosts"] = ["dagger-fraud-x-spark-worker-9"]
    other["inventory"]["_meta"]["hostvars"] = {"dagger-fraud-x-spark-worker-9": {"ansible_host": "10.64.16.9"}}
    (tmp_path / "fraud.json").write_text(json.dumps(fraud))
    (tmp_path / "fraud-x.json").write_text(json.dumps(other))
    result = ansible_inventory(tmp_path, DAGGER_STACKS="fraud,fraud-x")
    assert refused(result, "stack 'fraud-x'", "already declared by stack 'fraud'"), result.stderr


@pytest.mark.parametrize("stack", ["--help", "../fraud", "fraud;id"])
def test_a_stack_name_that_is_not_a_team_name_is_refused(exported, stack):
    result = ansible_inventory(exported, DAGGER_STACKS=stack)
    assert refused(result, f"stacks: {stack!r} is not a team stack name"), result.stderr


def test_the_lab_inventory_still_parses_with_the_plugin_enabled():
    result = subprocess.run(
        [str(BIN / "ansible-inventory"), "--list"],
        cwd=PLAYBOOKS,
        env={k: v for k, v in ansible_env(None).items() if k != "ANSIBLE_CONFIG"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "spark-blue-allocations-master" in json.loads(result.stdout)["_meta"]["hostvars"]
