"""Every team's stack, declared in process under Pulumi's mocks, keeps the platform's isolation
promises. Parametrised over every spec in infra/teams/, so a new team's pull request is held to
the same rules; each failure names the policy and the resource's URN."""

from __future__ import annotations

import base64
import dataclasses
import gc
import ipaddress
import json
import logging
import re
import runpy
from pathlib import Path

import javaproperties
import pytest
import yaml
from pulumi.runtime import config as pulumi_config
from pulumi.runtime import settings

from infra import platform_stack
from infra.components import PlacementError
from infra.components.common import KAFKA_PORTS, SPARK_PORTS, SSH_PORT, TEAM_LABEL
from infra.components.kafka_mirror import IDENTITY_POLICY, LOCAL_ALIAS, mm2_properties, mm2_settings
from infra.kafka_access import acls_for, mirror_acls
from infra.mocks import (
    PLATFORM_STACK_NAME,
    Declared,
    DuplicateUrnError,
    declare,
    declare_platform,
    platform_outputs,
    run,
    team_mocks,
)
from infra.sizing import worker_pod
from infra.spec import INFRA, TEAMS_DIR, TeamSpec, load, load_platform, parse
from infra.team import (
    OUTPUT_NAMES,
    PROJECT_ROLES,
    SECRET_OUTPUT_NAMES,
    SharedPlatform,
    network_tag,
    owners_group,
    team_program,
)
from infra.tiers import MIRROR_BROKERS

TEAMS = sorted(p.stem for p in TEAMS_DIR.glob("*.yaml"))

BUCKET = "gcp:storage/bucket:Bucket"
BUCKET_GRANT = "gcp:storage/bucketIAMMember:BucketIAMMember"
PROJECT_GRANT = "gcp:projects/iAMMember:IAMMember"
SA_GRANT = "gcp:serviceaccount/iAMMember:IAMMember"
ACCOUNT = "gcp:serviceaccount/account:Account"
FIREWALL = "gcp:compute/firewall:Firewall"
INSTANCE = "gcp:compute/instance:Instance"
NODE_POOL = "gcp:container/nodePool:NodePool"
NAMESPACE = "kubernetes:core/v1:Namespace"
QUOTA = "kubernetes:core/v1:ResourceQuota"
NETWORK_POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
WORKLOADS = ("kubernetes:apps/v1:Deployment", "kubernetes:apps/v1:StatefulSet")
CLUSTER_WIDE = (
    "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding",
    "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole",
)

BUCKET_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{1,61}[a-z0-9]$")
ACCOUNT_ID = re.compile(r"^[a-z][a-z0-9-]{4,28}[a-z0-9]$")
GCE_NAME = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
GCP_LABEL_KEY = re.compile(r"^[a-z][a-z0-9_-]{0,62}$")
GCP_LABEL_VALUE = re.compile(r"^[a-z0-9_-]{0,63}$")
BROAD_ROLES = re.compile(r"^roles/(owner|editor|viewer)$|[aA]dmin$")


# -- fixtures: one declaration per team for the whole session -------------------------------------


@pytest.fixture(scope="session")
def platform():
    return load_platform()


@pytest.fixture(scope="session")
def specs(platform) -> dict[str, TeamSpec]:
    return {team: load(TEAMS_DIR / f"{team}.yaml", platform) for team in TEAMS}


@pytest.fixture(scope="session")
def declarations(specs, platform) -> dict[str, list[Declared]]:
    return {team: declare(spec, platform) for team, spec in specs.items()}


@pytest.fixture(params=TEAMS)
def team(request, specs, declarations, platform):
    return Team(specs[request.param], declarations[request.param], platform)


class Team:
    """One team's spec and what its stack declared, with the lookups the policies need."""

    def __init__(self, spec: TeamSpec, declared: list[Declared], platform):
        self.spec, self.declared, self.platform = spec, declared, platform
        self.email = f"{spec.service_account_id}@{platform.project}.iam.gserviceaccount.com"
        self.member = f"serviceAccount:{self.email}"
        self.bucket = spec.bucket_name(platform.project)
        self.on_gke = spec.spark.flavour == "gke"

    def of(self, *types: str) -> list[Declared]:
        return [d for d in self.declared if d.type in types]

    def outputs(self) -> dict:
        return next(d for d in self.declared if d.type == "daggers:infra:TeamPlatform").outputs

    def kubernetes(self) -> list[Declared]:
        return [d for d in self.declared if d.type.startswith("kubernetes:")]


def k8s_quantity(value: str) -> float:
    """cpu in cores, memory in GiB."""
    units = {"m": 1e-3, "Mi": 1 / 1024, "Gi": 1, "Ti": 1024}
    for suffix, factor in units.items():
        if str(value).endswith(suffix):
            return float(str(value)[: -len(suffix)]) * factor
    return float(value)


# -- the checkpoint bucket ------------------------------------------------------------------------


def test_each_teams_bucket_grants_only_its_own_service_account(team):
    buckets = team.of(BUCKET)
    assert [b.inputs["name"] for b in buckets] == [team.bucket], (
        f"team {team.spec.name}: declares buckets {[b.urn for b in buckets]}; policy: exactly one, {team.bucket}"
    )
    grants = team.of(BUCKET_GRANT)
    assert grants, f"team {team.spec.name}: nobody may write {team.bucket}; policy: the team's account writes it"
    for grant in grants:
        assert grant.inputs["bucket"] == team.bucket and grant.inputs["member"] == team.member, (
            f"{grant.urn}: grants {grant.inputs['member']} on {grant.inputs['bucket']}; "
            f"policy: a bucket is granted to its own team's service account ({team.member}) only"
        )
        assert grant.inputs["role"] == "roles/storage.objectAdmin", (
            f"{grant.urn}: role {grant.inputs['role']}; policy: object access, not bucket administration"
        )


def test_each_bucket_is_private_uniform_versioned_and_keeps_deleted_checkpoints_for_the_retention(team):
    (bucket,) = team.of(BUCKET)
    i = bucket.inputs
    assert i["uniformBucketLevelAccess"] is True, f"{bucket.urn}: policy: uniform bucket-level access (no ACLs)"
    assert i["publicAccessPrevention"] == "enforced", f"{bucket.urn}: policy: public access prevention enforced"
    assert i["versioning"]["enabled"] is True, f"{bucket.urn}: policy: versioned, so a bad write can be undone"
    assert i.get("forceDestroy") is False, f"{bucket.urn}: policy: a stack delete never empties a team's bucket"
    assert i["location"] == team.spec.region.upper(), f"{bucket.urn}: policy: in the team's region"
    rules = [(r["action"]["type"], r["condition"]) for r in i["lifecycleRules"]]
    assert rules == [
        ("Delete", {"daysSinceNoncurrentTime": team.spec.checkpoint_retention_days, "withState": "ARCHIVED"})
    ], (
        f"{bucket.urn}: lifecycle {rules}; policy: noncurrent versions deleted after the spec's "
        f"{team.spec.checkpoint_retention_days} days, live checkpoint files never deleted by age"
    )


# -- network isolation ----------------------------------------------------------------------------


def test_every_namespace_has_a_default_deny_policy_and_the_quota_of_the_spec(team):
    namespaces = team.of(NAMESPACE)
    if not team.on_gke:
        assert not team.kubernetes(), (
            f"team {team.spec.name} (vm): declares {[d.urn for d in team.kubernetes()]}; "
            f"policy: a vm team has nothing in the shared cluster"
        )
        return
    assert [n.get("metadata.name") for n in namespaces] == [team.spec.namespace]
    for ns in namespaces:
        name = ns.get("metadata.name")
        in_ns = [d for d in team.declared if d.get("metadata.namespace") == name]
        deny = [
            p
            for p in in_ns
            if p.type == NETWORK_POLICY
            and p.get("spec.podSelector") in ({}, None)
            and sorted(p.get("spec.policyTypes", [])) == ["Egress", "Ingress"]
            and not p.get("spec.ingress")
            and not p.get("spec.egress")
        ]
        assert deny, f"{ns.urn}: policy: a NetworkPolicy denying all ingress and egress to every pod of {name}"
        quotas = [q for q in in_ns if q.type == QUOTA]
        assert len(quotas) == 1, f"{ns.urn}: quotas {[q.urn for q in quotas]}; policy: exactly one ResourceQuota"
        hard = quotas[0].get("spec.hard")
        q = team.spec.quota
        expected = {
            "requests.cpu": str(q.cpu),
            "limits.cpu": str(q.cpu),
            "requests.memory": f"{q.memory_gb}Gi",
            "limits.memory": f"{q.memory_gb}Gi",
            "pods": str(q.pods),
        }
        assert hard == expected, f"{quotas[0].urn}: hard {hard}; policy: the spec's quota {expected}"


def test_a_teams_pods_reach_only_the_kafka_clusters_it_reads(team):
    """Egress to port 9092 goes to the ranges of the clusters in the team's spec, read here from
    platform.yaml itself; before, every team reached every shared cluster whatever its tier."""
    if not team.on_gke:
        return
    catalog = yaml.safe_load((Path(__file__).resolve().parent.parent / "infra" / "platform.yaml").read_text())[
        "kafka_clusters"
    ]
    wanted = sorted({catalog[k.cluster]["network_range"] for k in team.spec.kafka})
    others = {c["network_range"] for name, c in catalog.items()} - set(wanted)
    reached = sorted(
        peer["ipBlock"]["cidr"]
        for policy in team.of(NETWORK_POLICY)
        for rule in policy.get("spec.egress") or []
        if any(port.get("port") == 9092 for port in rule.get("ports") or [])
        for peer in rule.get("to") or []
        if "ipBlock" in peer
    )
    assert reached == wanted, f"team {team.spec.name}: Kafka egress to {reached}; policy: only {wanted}"
    assert others, "the platform has clusters this team does not read, so the test can tell"


def test_firewalls_admit_only_the_teams_own_range_and_deny_the_rest(team):
    firewalls = team.of(FIREWALL)
    tag = network_tag(team.spec)
    allows = [f for f in firewalls if f.inputs.get("allows")]
    denies = [f for f in firewalls if f.inputs.get("denies")]
    assert allows and denies, f"team {team.spec.name}: policy: an allow rule for its range and a deny for the rest"
    for rule in firewalls:
        assert rule.inputs["direction"] == "INGRESS" and rule.inputs["targetTags"] == [tag], (
            f"{rule.urn}: targets {rule.inputs.get('targetTags')}; "
            f"policy: a team's rules apply to its own machines ({tag})"
        )
        assert not rule.inputs.get("sourceTags") and not rule.inputs.get("sourceServiceAccounts"), (
            f"{rule.urn}: policy: sources are ranges, never other machines' tags or accounts"
        )
    for rule in allows:
        assert rule.inputs["sourceRanges"] == [str(team.spec.cidr)], (
            f"{rule.urn}: admits {rule.inputs['sourceRanges']}; policy: only the team's own range {team.spec.cidr}"
        )
        ports = [p for a in rule.inputs["allows"] for p in a["ports"]]
        allowed = {*SPARK_PORTS, *KAFKA_PORTS} | (set() if team.on_gke else {SSH_PORT})
        assert all(a["protocol"] == "tcp" for a in rule.inputs["allows"]) and set(ports) <= allowed, (
            f"{rule.urn}: opens {ports}; policy: the Spark and Kafka ports ({sorted(allowed)}) only"
        )
    for rule in denies:
        assert rule.inputs["denies"] == [{"protocol": "all"}], f"{rule.urn}: policy: the deny rule refuses everything"
        assert rule.inputs["priority"] > max(a.inputs["priority"] for a in allows), (
            f"{rule.urn}: policy: the deny rule ranks below the team's allow rule"
        )


def test_no_grant_reaches_beyond_the_teams_namespace(team):
    cluster_wide = team.of(*CLUSTER_WIDE)
    assert not cluster_wide, f"{[d.urn for d in cluster_wide]}: policy: no ClusterRole or ClusterRoleBinding"
    group = owners_group(team.spec, "daggers.dev")
    for binding in team.of("kubernetes:rbac.authorization.k8s.io/v1:RoleBinding"):
        assert binding.get("metadata.namespace") == team.spec.namespace, (
            f"{binding.urn}: policy: a team's RoleBinding lives in the team's namespace"
        )
        assert binding.get("roleRef.kind") == "Role", f"{binding.urn}: policy: binds a namespaced Role"
        owners = [{"kind": "Group", "name": group, "apiGroup": "rbac.authorization.k8s.io"}]
        assert binding.inputs["subjects"] == owners, (
            f"{binding.urn}: subjects {binding.inputs['subjects']}; policy: the team's owners group {group} only"
        )
    for role in team.of("kubernetes:rbac.authorization.k8s.io/v1:Role"):
        resources = {r for rule in role.inputs["rules"] for r in rule["resources"]}
        assert "secrets" not in resources and "*" not in resources, (
            f"{role.urn}: grants {sorted(resources)}; policy: owners never read secrets or everything"
        )


def test_every_kubernetes_object_lives_in_the_teams_namespace(team):
    for d in team.kubernetes():
        if d.type == NAMESPACE:
            continue
        assert d.get("metadata.namespace") == team.spec.namespace, (
            f"{d.urn}: in namespace {d.get('metadata.namespace')!r}; policy: everything of team "
            f"{team.spec.name} is in {team.spec.namespace}"
        )


# -- identity -------------------------------------------------------------------------------------


def test_the_service_account_has_only_the_project_roles_the_team_needs(team):
    (account,) = team.of(ACCOUNT)
    assert account.inputs["accountId"] == team.spec.service_account_id, f"{account.urn}: policy: named from the spec"
    grants = team.of(PROJECT_GRANT)
    roles = sorted(g.inputs["role"] for g in grants)
    assert roles == sorted(PROJECT_ROLES[team.spec.spark.flavour]), (
        f"team {team.spec.name}: project roles {roles}; policy: {sorted(PROJECT_ROLES[team.spec.spark.flavour])}"
    )
    for grant in grants:
        assert grant.inputs["member"] == team.member, (
            f"{grant.urn}: grants {grant.inputs['member']}; policy: project roles go to the team's account only"
        )
        assert not BROAD_ROLES.search(grant.inputs["role"]), f"{grant.urn}: policy: no basic or admin role"
        assert grant.inputs["project"] == team.platform.project, f"{grant.urn}: policy: the platform's project only"


def test_workload_identity_binds_the_teams_account_to_its_own_namespace_only(team):
    bindings = team.of(SA_GRANT)
    if not team.on_gke:
        assert not bindings, f"{[b.urn for b in bindings]}: policy: a vm team lends its account to no workload"
        return
    (ksa,) = team.of("kubernetes:core/v1:ServiceAccount")
    assert ksa.get("metadata.annotations") == {"iam.gke.io/gcp-service-account": team.email}, (
        f"{ksa.urn}: policy: the namespace's service account is annotated with its team's account"
    )
    principal = f"serviceAccount:{team.platform.project}.svc.id.goog[{team.spec.namespace}/{ksa.get('metadata.name')}]"
    for binding in bindings:
        assert binding.inputs["role"] == "roles/iam.workloadIdentityUser" and binding.inputs["member"] == principal, (
            f"{binding.urn}: lets {binding.inputs['member']} act as the team's account; policy: only {principal}"
        )
        assert binding.inputs["serviceAccountId"].endswith(f"/{team.email}"), (
            f"{binding.urn}: policy: on the team's own account"
        )
    assert len(bindings) == 1, f"{[b.urn for b in bindings]}: policy: one Workload Identity binding per team"


# -- names and labels -----------------------------------------------------------------------------


def test_names_fit_gcps_rules(team):
    for d in team.of(BUCKET):
        name = d.inputs["name"]
        assert BUCKET_NAME.match(name) and 3 <= len(name) <= 63 and not name.startswith("goog"), (
            f"{d.urn}: bucket {name!r}; policy: lowercase letters, digits, -_. ; 3 to 63 characters"
        )
    for d in team.of(ACCOUNT):
        assert ACCOUNT_ID.match(d.inputs["accountId"]), (
            f"{d.urn}: account id {d.inputs['accountId']!r}; policy: 6 to 30 lowercase characters"
        )
    for d in team.declared:
        if d.type.startswith("gcp:compute/") or d.type == NODE_POOL:
            name, limit = d.inputs["name"], 40 if d.type == NODE_POOL else 63
            assert GCE_NAME.match(name) and len(name) <= limit, (
                f"{d.urn}: name {name!r}; policy: RFC 1035, at most {limit} characters"
            )
        if d.type.startswith("kubernetes:") and d.get("metadata.name"):
            assert DNS_LABEL.match(d.get("metadata.name")), f"{d.urn}: policy: Kubernetes names are DNS labels"


def test_every_resource_that_takes_labels_carries_the_teams_labels(team):
    wanted = team.spec.all_labels
    labelled = [(d, d.inputs.get("labels")) for d in team.of(BUCKET, INSTANCE)]
    labelled += [(d, d.get("nodeConfig.resourceLabels")) for d in team.of(NODE_POOL)]
    labelled += [(d, d.get("metadata.labels")) for d in team.kubernetes()]
    assert labelled, f"team {team.spec.name}: declares nothing labelled"
    for d, labels in labelled:
        missing = {k: v for k, v in wanted.items() if (labels or {}).get(k) != v}
        assert not missing, f"{d.urn}: lacks labels {missing}; policy: every resource carries the team's labels"
        if d.type.startswith("gcp:"):
            bad = {k: v for k, v in labels.items() if not (GCP_LABEL_KEY.match(k) and GCP_LABEL_VALUE.match(v))}
            assert not bad, f"{d.urn}: labels {bad}; policy: GCP label keys and values"


def test_child_names_are_derived_from_their_component(team):
    components = {d.name for d in team.declared if d.is_component}
    for d in team.declared:
        if d.parent is not None:
            assert d.parent in components and d.name.startswith(f"{d.parent}-"), (
                f"{d.urn}: named {d.name!r} under {d.parent!r}; policy: a child's name starts with its component's, "
                f"so two components never collide"
            )
    urns = [d.urn for d in team.declared]
    assert len(urns) == len(set(urns)), "policy: every URN is unique"


# -- spark ----------------------------------------------------------------------------------------


def test_spark_on_gke_runs_on_the_teams_own_tainted_node_pool(team):
    pools = team.of(NODE_POOL)
    if not team.on_gke:
        assert not pools, f"{[p.urn for p in pools]}: policy: a vm team has no node pool"
        return
    (pool,) = pools
    node = pool.inputs["nodeConfig"]
    assert node["taints"] == [{"key": TEAM_LABEL, "value": team.spec.name, "effect": "NO_SCHEDULE"}], (
        f"{pool.urn}: taints {node['taints']}; policy: only the team's pods schedule on its nodes"
    )
    assert node["labels"] == {TEAM_LABEL: team.spec.name}, f"{pool.urn}: policy: nodes labelled with their team"
    assert node["serviceAccount"] == team.email, f"{pool.urn}: policy: nodes run as the team's account"
    assert node["machineType"] == team.spec.spark.machine_type, f"{pool.urn}: policy: the spec's machine type"
    assert node["workloadMetadataConfig"] == {"mode": "GKE_METADATA"}, (
        f"{pool.urn}: policy: pods reach the GKE metadata server, never the node's credentials"
    )
    assert pool.get("networkConfig.podIpv4CidrBlock") == str(team.spec.cidr), (
        f"{pool.urn}: policy: the team's pods take their addresses from the team's range"
    )
    assert pool.get("autoscaling.totalMinNodeCount") == team.spec.spark.workers + 1
    for workload in team.of(*WORKLOADS):
        pod = workload.get("spec.template.spec")
        assert pod["nodeSelector"] == {TEAM_LABEL: team.spec.name}, (
            f"{workload.urn}: policy: the team's pods select the team's nodes"
        )
        assert pod["tolerations"] == [
            {"key": TEAM_LABEL, "operator": "Equal", "value": team.spec.name, "effect": "NoSchedule"}
        ], f"{workload.urn}: policy: tolerate only its own taint"
        for c in pod["containers"]:
            assert c["resources"]["requests"] == c["resources"]["limits"], (
                f"{workload.urn}: policy: requests equal limits (guaranteed, no noisy neighbour)"
            )
    workers = next(w for w in team.of(*WORKLOADS) if w.get("metadata.name") == "spark-worker")
    assert workers.get("spec.replicas") == team.spec.spark.workers, f"{workers.urn}: policy: the spec's workers"


def test_the_pods_of_a_team_fit_in_its_quota(team):
    if not team.on_gke:
        assert not team.of(*WORKLOADS)
        return
    cpu = memory = pods = 0.0
    for workload in team.of(*WORKLOADS):
        replicas = workload.get("spec.replicas")
        for c in workload.get("spec.template.spec.containers"):
            cpu += replicas * k8s_quantity(c["resources"]["requests"]["cpu"])
            memory += replicas * k8s_quantity(c["resources"]["requests"]["memory"])
        pods += replicas
    q = team.spec.quota
    assert cpu <= q.cpu and memory <= q.memory_gb and pods <= q.pods, (
        f"team {team.spec.name}: its pods ask {cpu:.1f} CPUs / {memory:.1f} GiB / {pods:.0f} pods; "
        f"policy: within the quota {q.cpu} / {q.memory_gb} / {q.pods}"
    )


def test_the_vm_flavour_inventory_has_a_host_for_every_instance(team):
    inventory = team.outputs().get("inventory")
    instances = {i.inputs["name"]: i for i in team.of(INSTANCE)}
    if team.on_gke:
        assert inventory is None and not instances, "policy: a gke team has no instances and no inventory"
        return
    mirrored = [k for k in team.spec.kafka if k.mirrored]
    brokers = MIRROR_BROKERS[team.spec.tier]
    counts = {g: len(inventory[g]["hosts"]) for g in ("spark_master", "spark_workers", "mirror_maker", "kafka_mirror")}
    assert counts == {
        "spark_master": 1,
        "spark_workers": team.spec.spark.workers,
        "mirror_maker": brokers * len(mirrored),
        "kafka_mirror": brokers * len(mirrored),
    }, (
        f"team {team.spec.name}: inventory groups {counts}; policy: one master, the spec's "
        f"{team.spec.spark.workers} workers, {brokers} mirror hosts per mirrored cluster"
    )
    hostvars = inventory["_meta"]["hostvars"]
    assert set(hostvars) == set(instances), "policy: the inventory lists exactly the stack's instances"
    for host, hv in hostvars.items():
        inst = instances[host]
        ip = inst.outputs["networkInterfaces"][0]["networkIp"]
        assert hv["ansible_host"] == ip and ipaddress.ip_address(ip) in team.spec.cidr, (
            f"{inst.urn}: ansible_host {hv['ansible_host']}; policy: its internal IP, inside {team.spec.cidr}"
        )
        assert not any(n.get("accessConfigs") for n in inst.inputs["networkInterfaces"]), (
            f"{inst.urn}: policy: no external IP"
        )
        assert inst.get("serviceAccount.email") == team.email, f"{inst.urn}: policy: runs as the team's account"
    master = hostvars[inventory["spark_master"]["hosts"][0]]["ansible_host"]
    assert team.outputs()["spark_master_url"] == f"spark://{master}:7077"


# -- the Kafka mirrors ----------------------------------------------------------------------------


def mm2_configs(team: Team) -> dict[str, str]:
    """{source alias: mm2.properties} from the ConfigMaps (gke) or the inventory (vm)."""
    if team.on_gke:
        return {
            javaproperties.loads(c.inputs["data"]["mm2.properties"])["clusters"].split(",")[0].strip(): c.inputs[
                "data"
            ]["mm2.properties"]
            for c in team.of(CONFIG_MAP)
            if "mm2.properties" in c.inputs["data"]
        }
    inventory = team.outputs()["inventory"]
    return {
        body["vars"]["kafka_mirror_source_alias"]: body["vars"]["mirror_maker_properties"]
        for body in inventory.values()
        if "mirror_maker_properties" in body.get("vars", {})
    }


def connector_config(props: dict[str, str], source: str, target: str) -> dict[str, str]:
    """What MM2's dedicated mode gives a connector of the flow source->target: the top-level
    properties, then the flow's `source->target.` ones (MirrorMakerConfig.connectorBaseConfig);
    the source, checkpoint and heartbeat connectors all get this same base."""
    prefix = f"{source}->{target}."
    config = {k: v for k, v in props.items() if "->" not in k}
    config.update({k[len(prefix) :]: v for k, v in props.items() if k.startswith(prefix)})
    return config


def test_every_mirror_uses_identity_replication_on_its_source_and_checkpoint_connectors(team):
    mirrored = {k.cluster: k for k in team.spec.kafka if k.mirrored}
    configs = mm2_configs(team)
    assert set(configs) == set(mirrored), (
        f"team {team.spec.name}: MirrorMaker 2 for {sorted(configs)}; "
        f"policy: one per mirrored cluster {sorted(mirrored)}"
    )
    servers = team.outputs()["mirror_bootstrap_servers"]
    for alias, text in configs.items():
        props = javaproperties.loads(text)
        where = f"team {team.spec.name}, mirror of {alias}"
        for connector in ("MirrorSourceConnector", "MirrorCheckpointConnector"):
            config = connector_config(props, alias, LOCAL_ALIAS)
            assert config.get("replication.policy.class") == IDENTITY_POLICY, (
                f"{where}: {connector} gets {config.get('replication.policy.class')}; policy: IdentityReplicationPolicy"
            )
        assert [c.strip() for c in props["clusters"].split(",")] == [alias, LOCAL_ALIAS]
        one_way = (props[f"{alias}->{LOCAL_ALIAS}.enabled"], props[f"{LOCAL_ALIAS}->{alias}.enabled"])
        assert one_way == ("true", "false"), f"{where}: policy: one way, source to mirror"
        assert props["sync.group.offsets.enabled"] == "true" and props["emit.checkpoints.enabled"] == "true", (
            f"{where}: policy: checkpoints emitted and group offsets synced"
        )
        assert props["offset-syncs.topic.location"] == "target", (
            f"{where}: policy: nothing written to the shared cluster"
        )
        # MM2 starts a heartbeat connector per pair, enabled or not, writing to the pair's target:
        # the pair into the shared cluster must not emit
        back = connector_config(props, LOCAL_ALIAS, alias)
        assert back.get("emit.heartbeats.enabled") == "false" and back.get("emit.checkpoints.enabled") == "false", (
            f"{where}: policy: no heartbeats or checkpoints written to the shared cluster"
        )
        assert connector_config(props, alias, LOCAL_ALIAS).get("emit.heartbeats.enabled") == "true"
        # the source's login by reference: no password in the file
        assert props[f"{alias}.security.protocol"] == "SASL_SSL" and props[f"{alias}.sasl.mechanism"] == "SCRAM-SHA-512"
        assert props[f"{alias}.sasl.jaas.config"] == f"${{file:/etc/mm2/secrets/{alias}.properties:sasl.jaas.config}}"
        assert (
            props["config.providers"] == "file"
            and props["config.providers.file.class"] == "org.apache.kafka.common.config.provider.FileConfigProvider"
        )
        assert [t.strip() for t in props[f"{alias}->{LOCAL_ALIAS}.topics"].split(",")] == list(mirrored[alias].topics)
        assert props[f"{alias}.bootstrap.servers"] == team.platform.kafka_clusters[alias].bootstrap_servers
        assert props[f"{LOCAL_ALIAS}.bootstrap.servers"] == servers[alias], (
            f"{where}: policy: MM2 writes where the daggers fail over to (the output mirror_bootstrap_servers)"
        )
        rf = min(3, MIRROR_BROKERS[team.spec.tier])
        factors = {k: v for k, v in props.items() if k.endswith("replication.factor")}
        assert factors and set(factors.values()) == {str(rf)}, f"{where}: replication factors {factors}; policy: {rf}"


# -- outputs --------------------------------------------------------------------------------------


def test_the_stack_outputs_are_what_the_other_parts_read(team):
    out = team.outputs()
    assert set(out) <= set(OUTPUT_NAMES) and {
        "spark_master_url",
        "checkpoint_url",
        "service_account_email",
        "mirror_bootstrap_servers",
    } <= set(out)
    assert re.fullmatch(r"spark://[a-z0-9.-]+:7077", out["spark_master_url"]), out["spark_master_url"]
    assert out["checkpoint_url"] == f"gs://{team.bucket}/checkpoints"
    assert out["service_account_email"] == team.email
    assert set(out["mirror_bootstrap_servers"]) == {k.cluster for k in team.spec.kafka if k.mirrored}
    assert out.get("namespace") == (team.spec.namespace if team.on_gke else None)


# -- across teams ---------------------------------------------------------------------------------


def _strings(value) -> list[str]:
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)] + [str(k) for k in value]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return [str(value)] if value is not None else []


def _identity_names(team: Team) -> set[str]:
    """The names that are team's own: its accounts, namespace, buckets, machines, tags, groups."""
    names = {
        team.email,
        team.spec.namespace,
        team.bucket,
        network_tag(team.spec),
        owners_group(team.spec, "daggers.dev"),
    }
    for d in team.declared:
        for candidate in (d.inputs.get("name"), d.get("metadata.name"), d.inputs.get("accountId")):
            if isinstance(candidate, str) and team.spec.name in candidate:
                names.add(candidate)
    return names


def test_no_resource_of_one_team_references_another_teams_identity_namespace_or_range(specs, declarations, platform):
    teams = {name: Team(specs[name], declarations[name], platform) for name in TEAMS}
    problems = []
    for other_name, other in teams.items():
        patterns = [re.compile(rf"(?<![A-Za-z0-9_-]){re.escape(n)}(?![A-Za-z0-9_-])") for n in _identity_names(other)]
        for name, team in teams.items():
            if name == other_name:
                continue
            for d in team.declared:
                for text in _strings(d.inputs) + _strings(d.outputs if d.is_component else {}):
                    hit = next((p.pattern for p in patterns if p.search(text)), None)
                    if hit:
                        problems.append(f"{d.urn}: mentions {other_name}'s {text!r}")
                    for token in re.findall(r"\b\d{1,3}(?:\.\d{1,3}){3}(?:/\d{1,2})?\b", text):
                        net = ipaddress.ip_network(token, strict=False)
                        if net.prefixlen > 0 and net.subnet_of(other.spec.cidr):
                            problems.append(f"{d.urn}: uses {token}, inside {other_name}'s range {other.spec.cidr}")
    assert not problems, "policy: no resource of one team names another team's identity or range:\n" + "\n".join(
        sorted(set(problems))
    )


def test_no_two_teams_declare_the_same_cloud_name(declarations):
    owners: dict[tuple[str, str], str] = {}
    clashes = []
    for team_name, declared in declarations.items():
        for d in declared:
            if d.type.startswith("gcp:") and "member" not in d.inputs:
                key = (d.type, d.inputs.get("name") or d.inputs.get("accountId"))
            elif d.type == NAMESPACE:
                key = (d.type, d.get("metadata.name"))
            else:
                continue
            if key in owners and owners[key] != team_name:
                clashes.append(f"{d.urn}: {key[1]} is also {owners[key]}'s")
            owners.setdefault(key, team_name)
    assert not clashes, "policy: every team's GCP names and namespace are its own:\n" + "\n".join(clashes)


def test_declaring_a_team_twice_gives_the_same_resources(specs, declarations, platform):
    team = "fraud" if "fraud" in specs else TEAMS[0]
    again = declare(specs[team], platform)

    def fingerprint(declared):
        return sorted(
            (d.urn, json.dumps(d.inputs, sort_keys=True), json.dumps(d.outputs, sort_keys=True, default=str))
            for d in declared
        )

    assert fingerprint(again) == fingerprint(declarations[team]), (
        "policy: a plan is a function of the spec (same spec, same resources, same addresses)"
    )


def test_a_range_too_small_for_the_node_pool_is_refused_naming_the_range(platform):
    spec = parse(
        "team: tiny\nowners: ['@gojek/tiny']\ntier: critical\nnetwork: {cidr: 10.64.200.0/24}\n",
        source="infra/teams/tiny.yaml",
        platform=platform,
    )
    with pytest.raises(PlacementError) as info:
        declare(spec, platform)
    assert "10.64.200.0/24" in str(info.value) and "network.cidr" in str(info.value)


# -- the platform stack and the entry point -------------------------------------------------------


def test_the_platform_cluster_enforces_network_policy_and_workload_identity(platform):
    declared = declare_platform(platform)
    (network,) = [d for d in declared if d.type == "gcp:compute/network:Network"]
    assert network.inputs["autoCreateSubnetworks"] is False, f"{network.urn}: policy: custom subnetworks only"
    (cluster,) = [d for d in declared if d.type == "gcp:container/cluster:Cluster"]
    assert cluster.inputs["datapathProvider"] == "ADVANCED_DATAPATH", (
        f"{cluster.urn}: policy: NetworkPolicy enforced (Dataplane V2)"
    )
    assert cluster.get("workloadIdentityConfig.workloadPool") == f"{platform.project}.svc.id.goog", (
        f"{cluster.urn}: policy: Workload Identity on"
    )
    assert cluster.get("privateClusterConfig.enablePrivateNodes") is True, f"{cluster.urn}: policy: private nodes"
    assert cluster.inputs["removeDefaultNodePool"] is True


def test_the_platform_exports_every_output_team_stacks_read(platform):
    outputs = platform_outputs(platform)
    assert set(outputs) == set(platform_stack.OUTPUTS) == set(SharedPlatform.__dataclass_fields__), (
        "policy: the platform stack exports exactly what SharedPlatform reads"
    )
    assert outputs["workload_pool"] == f"{platform.project}.svc.id.goog"
    assert "gke-gcloud-auth-plugin" in outputs["kubeconfig"]


def test_the_platforms_own_ranges_stay_out_of_the_teams_range(platform, specs):
    for name, net in platform_stack.platform_ranges().items():
        assert not net.overlaps(platform.network_range), (
            f"platform {name} range {net} overlaps the teams' range {platform.network_range}"
        )
        for spec in specs.values():
            assert not net.overlaps(spec.cidr), f"platform {name} range {net} overlaps {spec.name}'s {spec.cidr}"


def test_every_stack_file_points_at_the_spec_of_its_team():
    files = sorted(INFRA.glob("Pulumi.*.yaml"))
    assert files, "no stack files"
    for path in files:
        stack = path.name[len("Pulumi.") : -len(".yaml")]
        config = (yaml.safe_load(path.read_text()) or {}).get("config") or {}
        if stack == platform_stack.STACK:
            assert "daggers:teamSpec" not in config, f"{path.name}: the platform stack has no team"
            continue
        spec_path = config.get("daggers:teamSpec", f"teams/{stack}.yaml")
        assert spec_path == f"teams/{stack}.yaml" and (INFRA / spec_path).is_file(), (
            f"{path.name}: points at {spec_path}; policy: a team's stack reads infra/teams/{stack}.yaml"
        )


def test_the_project_file_runs_python_in_the_repositorys_virtualenv():
    project = yaml.safe_load((INFRA / "Pulumi.yaml").read_text())
    assert project["name"] == "daggers" and project["runtime"]["name"] == "python"
    assert (INFRA / project["runtime"]["options"]["virtualenv"]).resolve() == (INFRA.parent / ".venv").resolve()


@pytest.mark.parametrize(
    "stack_config",
    [
        {"daggers:teamSpec": "teams/growth.yaml"},
        {},  # a new team's pull request adds only its spec: the stack falls back to teams/<stack>.yaml
    ],
    ids=["with-teamSpec", "without-stack-file"],
)
def test_the_entry_point_declares_the_team_its_stack_is_named_after(platform, stack_config):
    exported: dict = {}

    def program():
        pulumi_config.set_all_config({**stack_config, "daggers:platformStack": PLATFORM_STACK_NAME})
        try:
            runpy.run_path(str(INFRA / "__main__.py"), run_name="__main__")
            exported.update(settings.get_root_resource().outputs)
        finally:
            pulumi_config.set_all_config({})

    declared = run(program, stack="growth", mocks=team_mocks(platform))
    assert any(d.type == "daggers:infra:TeamPlatform" and d.name == "growth" for d in declared)
    assert set(exported) == set(OUTPUT_NAMES), f"exports {sorted(exported)}; policy: {sorted(OUTPUT_NAMES)}"


def test_the_sample_teams_cover_both_flavours_and_every_tier(specs):
    assert {s.spark.flavour for s in specs.values()} == {"gke", "vm"}
    assert {s.tier for s in specs.values()} == {"critical", "standard", "experimental"}


def test_mirror_maker_on_gke_runs_only_the_flows_into_the_mirror(team):
    """Dedicated mode with --clusters local runs only connectors whose target is `local`."""
    mm2 = [w for w in team.of(*WORKLOADS) if str(w.get("metadata.name", "")).startswith("mm2-")]
    assert len(mm2) == (sum(1 for k in team.spec.kafka if k.mirrored) if team.on_gke else 0)
    for workload in mm2:
        container = workload.get("spec.template.spec.containers.0")
        assert container["command"][-2:] == ["--clusters", "local"], f"{workload.urn}: {container['command']}"
        source = workload.get("metadata.name").removeprefix("mm2-")
        secrets = [v for v in workload.get("spec.template.spec.volumes") if "secret" in v]
        assert [v["secret"]["secretName"] for v in secrets] == [f"mm2-{source}-credentials"]
        assert {m["mountPath"] for m in container["volumeMounts"]} == {"/etc/mm2", "/etc/mm2/secrets"}


def test_the_worker_daemon_gets_the_memory_the_spec_check_computed(team):
    """infra/sizing.py checks the same --memory the worker Deployment passes (one computation)."""
    if not team.on_gke:
        return
    workers = next(w for w in team.of(*WORKLOADS) if w.get("metadata.name") == "spark-worker")
    args = workers.get("spec.template.spec.containers.0.args")
    memory = args[args.index("--memory") + 1]
    assert memory == f"{worker_pod(team.spec.spark.worker_cores, team.spec.spark.worker_memory_gb)[2]}m"
    assert int(memory.removesuffix("m")) >= 1024


HOSTILE_PATTERNS = [
    "orders-v\\d+",
    "a=b",
    "a:b",
    "#not-a-comment",
    "!bang",
    "back\\\\slash",
    "trail\\",
    "caf\u00e9-\u30c8\u30d4\u30c3\u30af",
    "x\\u0041",
    " lead",
    "p\\Q.*\\E",
    "a{1}b",
]


@pytest.mark.parametrize("pattern", HOSTILE_PATTERNS)
def test_a_topic_pattern_survives_the_properties_writer_as_it_is(pattern):
    text = mm2_properties(
        source_alias="esb-critical",
        source_bootstrap_servers="s:9092",
        local_bootstrap_servers="l:9092",
        topics=[pattern, "second"],
        replication_factor=1,
    )
    props = javaproperties.loads(text)
    assert props["esb-critical->local.topics"] == f"{pattern}, second"
    flows = {k for k in props if "->" in k and k.endswith(".enabled")}
    assert flows == {
        "esb-critical->local.enabled",
        "local->esb-critical.enabled",
        "esb-critical->local.emit.heartbeats.enabled",
        "local->esb-critical.emit.heartbeats.enabled",
        "local->esb-critical.emit.checkpoints.enabled",
    }
    assert [props[k] for k in sorted(flows)] == ["true", "true", "false", "false", "false"]
    # the 34 settings of mm2_settings (8 clusters and login, 2 flow, 2 policy, 5 one-way, 4 checkpoints,
    # 5 syncs and refreshes, tasks.max, 7 replication factors): a pattern adds none
    assert len(props) == 34, sorted(props)


@pytest.mark.parametrize(
    "pattern",
    [
        "x\nlocal->esb-critical.enabled = true",
        "x\rlocal->esb-critical.enabled=true",
        "a,b",
        "x\u2028y",
        "tab\there",
        "",
    ],
)
def test_the_properties_writer_refuses_what_would_change_the_settings(pattern):
    with pytest.raises(ValueError, match="topic pattern"):
        mm2_properties(
            source_alias="esb-critical",
            source_bootstrap_servers="s:9092",
            local_bootstrap_servers="l:9092",
            topics=[pattern],
            replication_factor=1,
        )


def test_a_newline_pattern_that_got_past_the_spec_still_adds_no_reverse_flow():
    """Even written raw (no check), the writer escapes the newline: one key, no second flow."""
    settings = mm2_settings(
        source_alias="esb-critical",
        source_bootstrap_servers="s:9092",
        local_bootstrap_servers="l:9092",
        topics=["x"],
        replication_factor=1,
    )
    settings["esb-critical->local.topics"] = "x\nlocal->esb-critical.enabled = true"
    props = javaproperties.loads(javaproperties.dumps(settings, timestamp=False))
    assert props["local->esb-critical.enabled"] == "false"
    assert props["esb-critical->local.topics"] == "x\nlocal->esb-critical.enabled = true"


def test_a_cluster_listed_twice_is_refused_by_the_mocks_as_by_the_engine(specs, platform, caplog):
    fraud = specs["fraud"]
    twice = dataclasses.replace(fraud, kafka=fraud.kafka + fraud.kafka)
    with pytest.raises(DuplicateUrnError, match="Duplicate resource URN"):
        declare(twice, platform)
    # the next run lets go of the failed run's futures: none may log "Future exception was never
    # retrieved" into whatever test runs when they are collected
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        declare(fraud, platform)
        gc.collect()
    assert [r.getMessage() for r in caplog.records if r.name == "asyncio"] == []


# -- Kafka access as data: expectations written from infra/platform.yaml by hand ---------------------


def _acl_rows(acls):
    return {(a.cluster, a.principal, a.resource_type, a.name, a.pattern_type, a.operation, a.permission) for a in acls}


def test_the_team_principals_acls_are_its_grants_and_its_groups(specs, platform):
    def topic(cluster, team, name, pattern="LITERAL"):
        return {(cluster, f"User:dagger-{team}", "TOPIC", name, pattern, op, "ALLOW") for op in ("READ", "DESCRIBE")}

    def group(cluster, team):
        return {(cluster, f"User:dagger-{team}", "GROUP", f"dagger-{team}--", "PREFIXED", "READ", "ALLOW")}

    assert _acl_rows(acls_for(specs["fraud"], platform)) == (
        topic("esb-critical", "fraud", "GO_RIDE-booking-log")
        | topic("esb-critical", "fraud", "GO_CAR-booking-log")
        | topic("esb-critical", "fraud", "payment-", "PREFIXED")
        | group("esb-critical", "fraud")
    )
    assert _acl_rows(acls_for(specs["growth"], platform)) == (
        topic("playground", "growth", "sandbox-", "PREFIXED")
        | topic("playground", "growth", "campaign-triggers")
        | group("playground", "growth")
    )
    assert _acl_rows(acls_for(specs["api-health"], platform)) == (
        topic("logstream", "api-health", "api-gateway-log", "PREFIXED")
        | topic("logstream", "api-health", "p-logstream-", "PREFIXED")
        | group("logstream", "api-health")
    )
    allocations = _acl_rows(acls_for(specs["allocations"], platform))
    assert allocations == (
        topic("esb-critical", "allocations", "GO_RIDE-booking-log")
        | topic("esb-critical", "allocations", "GO_CAR-booking-log")
        | topic("esb-critical", "allocations", "driver-location-ping")
        | topic("esb-critical", "allocations", "available-driver-location-ping")
        | group("esb-critical", "allocations")
        | topic("mainstream", "allocations", "booking-events-", "PREFIXED")
        | topic("mainstream", "allocations", "campaign-", "PREFIXED")
        | group("mainstream", "allocations")
    )
    # nobody but fraud reads payments; nobody reads the restricted customer or audit topics
    every = set().union(*(_acl_rows(acls_for(s, platform)) for s in specs.values()))
    assert {r[1] for r in every if r[3] == "payment-"} == {"User:dagger-fraud"}
    assert not {r for r in every if r[3] in ("customer-profile-updates", "audit-log")}


def test_the_mirror_principal_only_reads_what_it_replicates(specs, platform):
    fraud = _acl_rows(mirror_acls(specs["fraud"], platform))
    assert fraud == {
        ("esb-critical", "User:mm2-fraud-esb-critical", "TOPIC", name, pattern, op, "ALLOW")
        for name, pattern in (
            ("GO_RIDE-booking-log", "LITERAL"),
            ("GO_CAR-booking-log", "LITERAL"),
            ("payment-", "PREFIXED"),
        )
        for op in ("READ", "DESCRIBE", "DESCRIBE_CONFIGS")
    }
    assert mirror_acls(specs["growth"], platform) == []  # growth does not mirror
    every = [a for s in specs.values() for a in mirror_acls(s, platform)]
    assert {a.operation for a in every} == {"READ", "DESCRIBE", "DESCRIBE_CONFIGS"}
    assert {a.resource_type for a in every} == {"TOPIC"}


# -- Spark's own authentication -------------------------------------------------------------------

SECRET = "kubernetes:core/v1:Secret"
GENERATED = "random:index/randomPassword:RandomPassword"
# the lab role's settings (playbooks/roles/spark/vars/main.yml), written out here, not imported
EXPECTED_SPARK_SETTINGS = {
    "spark.authenticate": "true",
    "spark.network.crypto.enabled": "true",
    "spark.network.crypto.saslFallback": "false",
    "spark.master.rest.enabled": "false",
    "spark.ui.killEnabled": "false",
    "spark.ui.filters": "org.apache.spark.ui.JWSFilter",
}
AUTH_SECRET_KEY = "spark.authenticate.secret"
UI_KEY_KEY = "spark.org.apache.spark.ui.JWSFilter.param.secretKey"
SPARK_USER = 185  # the apache/spark image's `spark` user


def spark_conf(team: Team) -> tuple[Declared, dict[str, str]]:
    """The team's one Secret holding a spark-defaults.conf, and the conf read back by javaproperties."""
    (secret,) = [s for s in team.of(SECRET) if "spark-defaults.conf" in (s.inputs.get("stringData") or {})]
    return secret, javaproperties.loads(secret.inputs["stringData"]["spark-defaults.conf"])


def spark_workloads(team: Team) -> dict[str, Declared]:
    return {w.get("metadata.name"): w for w in team.of(*WORKLOADS) if str(w.get("metadata.name")).startswith("spark-")}


def test_spark_on_gke_reads_authentication_encryption_and_the_ui_filter_from_a_secret_of_its_namespace(team):
    if not team.on_gke:
        assert not [s for s in team.of(SECRET) if "spark-defaults.conf" in (s.inputs.get("stringData") or {})]
        return
    secret, props = spark_conf(team)
    assert secret.get("metadata.namespace") == team.spec.namespace, f"{secret.urn}: policy: in the team's namespace"
    assert "stringData" in secret.secrets, f"{secret.urn}: policy: the conf is a secret in Pulumi's state"
    assert {k: props.get(k) for k in EXPECTED_SPARK_SETTINGS} == EXPECTED_SPARK_SETTINGS
    assert set(props) == set(EXPECTED_SPARK_SETTINGS) | {AUTH_SECRET_KEY, UI_KEY_KEY}
    generated = {d.inputs["length"]: d.outputs["result"] for d in team.of(GENERATED)}
    assert set(generated) == {48, 64}, f"team {team.spec.name}: generated {sorted(generated)}"
    assert props[AUTH_SECRET_KEY] == generated[48] and props[UI_KEY_KEY] == generated[64], (
        "policy: the conf carries the values the stack generated (and exports)"
    )
    for value in (props[AUTH_SECRET_KEY], props[UI_KEY_KEY]):
        assert re.fullmatch(r"[A-Za-z0-9]+", value)
    # JWSFilter decodes its key as BASE64URL into an HS256 key: 384 bits
    key = props[UI_KEY_KEY]
    assert len(base64.urlsafe_b64decode(key + "=" * (-len(key) % 4))) * 8 == 384


def test_spark_pods_mount_the_conf_read_only_and_run_as_the_images_user(team):
    if not team.on_gke:
        return
    secret, _ = spark_conf(team)
    workloads = spark_workloads(team)
    assert set(workloads) == {"spark-master", "spark-worker"}
    for _name, w in workloads.items():
        pod = w.get("spec.template.spec")
        ctx = pod["securityContext"]
        assert (ctx["runAsNonRoot"], ctx["runAsUser"], ctx["runAsGroup"]) == (True, SPARK_USER, SPARK_USER), (
            f"{w.urn}: policy: non-root, as the image's user {SPARK_USER}"
        )
        (container,) = pod["containers"]
        args = container["args"]
        path = args[args.index("--properties-file") + 1]
        (mount,) = [m for m in container["volumeMounts"] if path.startswith(m["mountPath"].rstrip("/") + "/")]
        assert mount["readOnly"] is True, f"{w.urn}: policy: the conf is mounted read-only"
        (volume,) = [v for v in pod["volumes"] if v["name"] == mount["name"]]
        assert volume["secret"]["secretName"] == secret.get("metadata.name")
        assert volume["secret"]["defaultMode"] == 0o400, f"{w.urn}: policy: owner read only"
        items = {i["path"]: i["key"] for i in volume["secret"]["items"]}
        assert items[path[len(mount["mountPath"].rstrip("/")) + 1 :]] == "spark-defaults.conf"
        probe = container["readinessProbe"]
        assert "tcpSocket" in probe and "httpGet" not in probe, (
            f"{w.urn}: policy: TCP probes (the UIs answer 403 behind the JWSFilter)"
        )


def _secret_outputs(spec, platform) -> dict[str, tuple[bool, str | None]]:
    """{output: (is secret, value)} of the team's stack outputs for the Spark secrets, under the mocks."""
    found: dict = {}

    async def program():
        team = team_program(spec, platform, platform_stack_name=PLATFORM_STACK_NAME)
        for name in SECRET_OUTPUT_NAMES:
            value = getattr(team, name)
            if value is None:
                found[name] = (False, None)
                continue
            found[name] = (await value.is_secret(), await value.future())

    run(program, stack=spec.name, mocks=team_mocks(platform))
    return found


def test_the_spark_secrets_are_secret_outputs_and_differ_between_teams(specs, declarations, platform):
    values = {}
    for name, spec in specs.items():
        outputs = _secret_outputs(spec, platform)
        if spec.spark.flavour != "gke":
            assert outputs == {"spark_auth_secret": (False, None), "spark_ui_key": (False, None)}
            continue
        assert all(secret for secret, _ in outputs.values()), f"team {name}: {sorted(outputs)} must be secret"
        _, props = spark_conf(Team(spec, declarations[name], platform))
        assert (outputs["spark_auth_secret"][1], outputs["spark_ui_key"][1]) == (
            props[AUTH_SECRET_KEY],
            props[UI_KEY_KEY],
        ), f"team {name}: the outputs are what its cluster runs with"
        values[name] = (props[AUTH_SECRET_KEY], props[UI_KEY_KEY])
    assert len(values) >= 2, "two gke teams at least, to compare"
    every = [v for pair in values.values() for v in pair]
    assert len(set(every)) == len(every), "policy: no two clusters share a secret or a UI key"


def test_the_vm_flavour_leaves_spark_auth_to_the_roles_defaults_which_match_the_gke_settings(team):
    """On VMs the role writes the conf: spark_auth true by default, the same settings as on GKE,
    and no variable of the stack's inventory can switch it off."""
    role = INFRA.parent / "playbooks" / "roles" / "spark"
    defaults = yaml.safe_load((role / "defaults" / "main.yml").read_text())
    assert defaults["spark_auth"] is True
    role_vars = yaml.safe_load((role / "vars" / "main.yml").read_text())
    fixed = {
        k: str(v).lower() if isinstance(v, bool) else str(v)
        for k, v in role_vars["spark_auth_defaults"].items()
        if k not in (AUTH_SECRET_KEY, UI_KEY_KEY)
    }
    fixed.update(
        {
            k: v
            for k, v in (("spark.master.rest.enabled", "false"), ("spark.ui.killEnabled", "false"))
            if f"'{k}': false" in role_vars["spark_defaults"]
        }
    )
    assert fixed == EXPECTED_SPARK_SETTINGS, "the role's settings and the stacks' are the same"
    if team.on_gke:
        return
    inventory = team.outputs()["inventory"]
    names = {k for body in inventory.values() if isinstance(body, dict) for k in body.get("vars", {})}
    names |= {k for hv in inventory["_meta"]["hostvars"].values() for k in hv}
    assert not names & {"spark_auth", "spark_extra_defaults", "spark_user", "spark_secrets_dir"}, sorted(names)
