"""The platform's rules (infra/policy): each rule on hand-built compliant and violating resources,
every sample team's declared resources against every rule, and the CrossGuard pack serving them."""

from __future__ import annotations

import copy
import ipaddress
import runpy
import sys

import pytest
from google.protobuf import struct_pb2
from pulumi.runtime import proto

from infra import spec
from infra.mocks import declare, declare_platform
from infra.policy import rules
from infra.policy.rules import Resource, Teams

PROJECT = "daggers-platform"
TEAMS = Teams.of(
    PROJECT,
    {
        "fraud": ipaddress.IPv4Network("10.64.16.0/20"),
        "fraud-ops": ipaddress.IPv4Network("10.64.48.0/22"),
        "growth": ipaddress.IPv4Network("10.64.40.0/22"),
    },
    {"fraud": "dagger-fraud-owners@daggers.dev", "growth": "dagger-growth-owners@daggers.dev"},
)
SA = f"dagger-fraud@{PROJECT}.iam.gserviceaccount.com"
LABELS = {"team": "fraud", "tier": "critical", "managed-by": "daggers-infra", "cost_center": "cc-5100"}
K8S_LABELS = {"daggers.dev/team": "fraud"}


def urn(resource_type: str, name: str, stack: str = "fraud") -> str:
    return f"urn:pulumi:{stack}::daggers-infra::daggers:index:Team${resource_type}::{name}"


def res(resource_type: str, name: str, props: dict, stack: str = "fraud") -> Resource:
    return Resource(resource_type, urn(resource_type, name, stack), props)


def fraud_stack() -> list[Resource]:
    """What a compliant team stack declares: identity, network, namespace guards, Spark, bucket."""
    ns = {"namespace": "dagger-fraud", "labels": K8S_LABELS}
    return [
        res("gcp:serviceaccount/account:Account", "fraud-sa", {"accountId": "dagger-fraud", "displayName": "fraud"}),
        res(
            "gcp:serviceaccount/iAMMember:IAMMember",
            "fraud-wi",
            {
                "serviceAccountId": f"projects/{PROJECT}/serviceAccounts/{SA}",
                "role": "roles/iam.workloadIdentityUser",
                "member": f"serviceAccount:{PROJECT}.svc.id.goog[dagger-fraud/spark]",
            },
        ),
        res(
            "gcp:projects/iAMMember:IAMMember",
            "fraud-logs",
            {"project": PROJECT, "role": "roles/logging.logWriter", "member": f"serviceAccount:{SA}"},
        ),
        res(
            "gcp:compute/subnetwork:Subnetwork",
            "fraud-subnet",
            {
                "name": "dagger-fraud",
                "ipCidrRange": "10.64.16.0/20",
                "network": "daggers-vpc",
                "privateIpGoogleAccess": True,
            },
        ),
        res(
            "gcp:compute/firewall:Firewall",
            "fraud-internal",
            {
                "name": "dagger-fraud-internal",
                "network": "daggers-vpc",
                "direction": "INGRESS",
                "allows": [{"protocol": "tcp", "ports": ["7077", "8080"]}],
                "sourceRanges": ["10.64.16.0/20"],
                "targetTags": ["dagger-fraud"],
            },
        ),
        res(
            "gcp:compute/firewall:Firewall",
            "fraud-deny-all",
            {
                "name": "dagger-fraud-deny-all",
                "network": "daggers-vpc",
                "priority": 65000,
                "denies": [{"protocol": "all"}],
                "sourceRanges": ["0.0.0.0/0"],
            },
        ),
        res(
            "gcp:compute/instance:Instance",
            "fraud-worker-0",
            {
                "name": "dagger-fraud-spark-worker-0",
                "machineType": "n2-standard-8",
                "zone": "asia-southeast1-a",
                "labels": LABELS,
                "tags": ["dagger-fraud"],
                "bootDisk": {"initializeParams": {"image": "debian-cloud/debian-12"}},
                "networkInterfaces": [{"subnetwork": "dagger-fraud"}],
                "serviceAccount": {"email": SA, "scopes": ["cloud-platform"]},
            },
        ),
        res(
            "gcp:container/nodePool:NodePool",
            "fraud-pool",
            {
                "name": "dagger-fraud",
                "cluster": "daggers-gke",
                "nodeCount": 6,
                "nodeConfig": {
                    "machineType": "n2-standard-8",
                    "resourceLabels": LABELS,
                    "labels": {"daggers.dev/team": "fraud"},
                    "serviceAccount": SA,
                },
            },
        ),
        res(
            "gcp:storage/bucket:Bucket",
            "fraud-checkpoints",
            {
                "name": f"{PROJECT}-fraud-checkpoints",
                "location": "ASIA-SOUTHEAST1",
                "publicAccessPrevention": "enforced",
                "uniformBucketLevelAccess": True,
                "versioning": {"enabled": True},
                "labels": LABELS,
            },
        ),
        res(
            "gcp:storage/bucketIAMMember:BucketIAMMember",
            "fraud-checkpoints-writer",
            {
                "bucket": f"{PROJECT}-fraud-checkpoints",
                "role": "roles/storage.objectAdmin",
                "member": f"serviceAccount:{SA}",
            },
        ),
        res(
            "kubernetes:core/v1:Namespace",
            "fraud-ns",
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "dagger-fraud", "labels": K8S_LABELS}},
        ),
        res(
            "kubernetes:core/v1:ResourceQuota",
            "fraud-quota",
            {
                "kind": "ResourceQuota",
                "metadata": {**ns, "name": "dagger-fraud"},
                "spec": {"hard": {"requests.cpu": "160", "requests.memory": "640Gi", "pods": "200"}},
            },
        ),
        res(
            "kubernetes:core/v1:LimitRange",
            "fraud-limits",
            {
                "kind": "LimitRange",
                "metadata": {**ns, "name": "dagger-fraud"},
                "spec": {"limits": [{"type": "Container", "default": {"cpu": "1"}}]},
            },
        ),
        res(
            "kubernetes:networking.k8s.io/v1:NetworkPolicy",
            "fraud-default-deny",
            {
                "kind": "NetworkPolicy",
                "metadata": {**ns, "name": "default-deny"},
                "spec": {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]},
            },
        ),
        res(
            "kubernetes:networking.k8s.io/v1:NetworkPolicy",
            "fraud-allow-spark",
            {
                "kind": "NetworkPolicy",
                "metadata": {**ns, "name": "allow-spark"},
                "spec": {
                    "podSelector": {"matchLabels": {"app": "spark"}},
                    "policyTypes": ["Ingress"],
                    "ingress": [{"from": [{"podSelector": {"matchLabels": {"app": "spark"}}}]}],
                },
            },
        ),
        res(
            "kubernetes:core/v1:ServiceAccount",
            "fraud-ksa",
            {
                "kind": "ServiceAccount",
                "metadata": {**ns, "name": "spark", "annotations": {"iam.gke.io/gcp-service-account": SA}},
            },
        ),
        res(
            "kubernetes:rbac.authorization.k8s.io/v1:Role",
            "fraud-role",
            {
                "kind": "Role",
                "metadata": {**ns, "name": "spark"},
                "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "create", "delete"]}],
            },
        ),
        res(
            "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding",
            "fraud-binding",
            {
                "kind": "RoleBinding",
                "metadata": {**ns, "name": "spark"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "spark"},
                "subjects": [{"kind": "ServiceAccount", "name": "spark", "namespace": "dagger-fraud"}],
            },
        ),
        res(
            "kubernetes:apps/v1:Deployment",
            "fraud-master",
            {
                "kind": "Deployment",
                "metadata": {**ns, "name": "spark-master"},
                "spec": {
                    "template": {
                        "spec": {
                            "containers": [
                                {
                                    "name": "master",
                                    "image": "apache/spark:4.0.0",
                                    "env": [{"name": "CHECKPOINTS", "value": f"gs://{PROJECT}-fraud-checkpoints"}],
                                }
                            ]
                        }
                    }
                },
            },
        ),
    ]


def find(stack: list[Resource], name: str) -> Resource:
    return next(r for r in stack if r.name == name)


def check(r: Resource, team: str = "fraud") -> list[rules.Violation]:
    return rules.check_resource(r.type, r.props, r.urn, team, TEAMS)


def violations_of(r: Resource, rule: str, team: str = "fraud") -> list[str]:
    """The violations of one rule, each asserted to name the rule and the resource's URN."""
    found = [v for v in check(r, team) if v.rule == rule]
    for v in found:
        assert str(v).startswith(f"{rule}: {r.urn}: "), str(v)
    return [str(v) for v in found]


def changed(r: Resource, change) -> Resource:
    props = copy.deepcopy(dict(r.props))
    change(props)
    return Resource(r.type, r.urn, props)


# -- the compliant stack ----------------------------------------------------------------------------


def test_a_compliant_team_stack_breaks_no_rule():
    assert rules.check_stack(fraud_stack(), "fraud", TEAMS) == []


def test_the_team_is_read_from_the_urns_stack():
    stack = fraud_stack()
    assert rules.stack_of(stack[0].urn) == "fraud"
    assert rules.check_stack(stack, teams=TEAMS) == []
    bucket = changed(find(stack, "fraud-checkpoints"), lambda p: p["labels"].update(team="growth"))
    assert rules.check_resource(bucket.type, bucket.props, bucket.urn, teams=TEAMS)


# -- no public buckets ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "change, expected",
    [
        (
            lambda p: p.update(publicAccessPrevention="inherited"),
            "publicAccessPrevention is 'inherited'; it must be 'enforced'",
        ),
        (lambda p: p.pop("publicAccessPrevention"), "publicAccessPrevention is None"),
        (lambda p: p.update(uniformBucketLevelAccess=False), "uniformBucketLevelAccess is False; it must be true"),
        (lambda p: p.pop("uniformBucketLevelAccess"), "uniformBucketLevelAccess is None"),
    ],
)
def test_a_bucket_without_public_access_prevention_or_uniform_access_is_refused(change, expected):
    bucket = changed(find(fraud_stack(), "fraud-checkpoints"), change)
    found = violations_of(bucket, rules.NO_PUBLIC_BUCKETS)
    assert len(found) == 1 and expected in found[0]


@pytest.mark.parametrize("member", ["allUsers", "allAuthenticatedUsers"])
def test_no_iam_member_grants_everyone(member):
    grant = changed(find(fraud_stack(), "fraud-checkpoints-writer"), lambda p: p.update(member=member))
    assert violations_of(grant, rules.NO_PUBLIC_BUCKETS) == [
        f"{rules.NO_PUBLIC_BUCKETS}: {grant.urn}: member grants {member}: nothing is public"
    ]
    binding = res(
        "gcp:storage/bucketIAMBinding:BucketIAMBinding",
        "b",
        {
            "bucket": f"{PROJECT}-fraud-checkpoints",
            "role": "roles/storage.objectViewer",
            "members": [f"serviceAccount:{SA}", member],
        },
    )
    assert "members[1] grants" in violations_of(binding, rules.NO_PUBLIC_BUCKETS)[0]
    project = res(
        "gcp:projects/iAMMember:IAMMember",
        "p",
        {"project": PROJECT, "role": "roles/logging.logWriter", "member": member},
    )
    assert violations_of(project, rules.NO_PUBLIC_BUCKETS)


def test_no_bucket_acl_or_iam_policy_grants_everyone():
    acl = res(
        "gcp:storage/bucketAccessControl:BucketAccessControl",
        "acl",
        {"bucket": f"{PROJECT}-fraud-checkpoints", "entity": "allUsers", "role": "READER"},
    )
    assert "entity grants allUsers" in violations_of(acl, rules.NO_PUBLIC_BUCKETS)[0]
    policy = res(
        "gcp:storage/bucketIAMPolicy:BucketIAMPolicy",
        "pol",
        {
            "bucket": f"{PROJECT}-fraud-checkpoints",
            "policyData": '{"bindings":[{"role":"roles/storage.objectViewer","members":["allAuthenticatedUsers"]}]}',
        },
    )
    assert "policyData grants allAuthenticatedUsers" in violations_of(policy, rules.NO_PUBLIC_BUCKETS)[0]


# -- team isolation -------------------------------------------------------------------------------


def test_a_grant_on_another_teams_bucket_is_refused():
    grant = changed(
        find(fraud_stack(), "fraud-checkpoints-writer"), lambda p: p.update(bucket=f"{PROJECT}-growth-checkpoints")
    )
    assert violations_of(grant, rules.TEAM_ISOLATION) == [
        f"{rules.TEAM_ISOLATION}: {grant.urn}: bucket = '{PROJECT}-growth-checkpoints' names team growth's "
        "resources; the fraud stack may only reference the fraud team's"
    ]


def test_granting_another_teams_identity_is_refused():
    grant = changed(
        find(fraud_stack(), "fraud-checkpoints-writer"),
        lambda p: p.update(member=f"serviceAccount:dagger-growth@{PROJECT}.iam.gserviceaccount.com"),
    )
    assert "member = 'serviceAccount:dagger-growth@" in violations_of(grant, rules.TEAM_ISOLATION)[0]
    wi = changed(
        find(fraud_stack(), "fraud-wi"),
        lambda p: p.update(member=f"serviceAccount:{PROJECT}.svc.id.goog[dagger-growth/spark]"),
    )
    assert "names team growth's resources" in violations_of(wi, rules.TEAM_ISOLATION)[0]


def test_teams_are_recognised_by_their_exact_identities_not_by_a_prefix():
    assert TEAMS.named_in("dagger-fraud-ops") == {"fraud-ops"}
    assert TEAMS.named_in(f"gs://{PROJECT}-fraud-ops-checkpoints/x") == {"fraud-ops"}
    assert TEAMS.named_in(f"projects/{PROJECT}/serviceAccounts/dagger-growth@{PROJECT}.iam.gserviceaccount.com") == {
        "growth"
    }
    assert TEAMS.named_in(f"serviceAccount:{PROJECT}.svc.id.goog[dagger-growth/dagger]") == {"growth"}
    # a longer name that starts like a team's is nobody's: not fraud's, not fraud-ops'
    assert TEAMS.named_in("dagger-fraud-ops-spark dagger-fraud-spark-master dagger-fraudster") == set()
    assert TEAMS.named_in("daggers-vpc dagger-nobody dagger-growthy") == set()
    grant = changed(
        find(fraud_stack(), "fraud-wi"),
        lambda p: p.update(member=f"serviceAccount:{PROJECT}.svc.id.goog[dagger-fraud-ops/spark]"),
    )
    assert "names team fraud-ops's" in violations_of(grant, rules.TEAM_ISOLATION)[0]


@pytest.mark.parametrize(
    "spelling",
    [
        f"serviceaccount:DAGGER-GROWTH@{PROJECT.upper()}.IAM.GSERVICEACCOUNT.COM",  # case
        f"serviceAccount: dagger-growth@{PROJECT}.iam.gserviceaccount.com. ",  # blanks, FQDN dot
        f"serviceAccount:ｄａｇｇｅｒ-growth@{PROJECT}.iam.gserviceaccount.com",  # fullwidth letters
        f"https://{PROJECT}-growth-checkpoints.storage.googleapis.com/x",  # bucket in a host name
    ],
)
def test_another_teams_identity_is_recognised_in_any_spelling(spelling):
    assert TEAMS.named_in(spelling) == {"growth"}


def test_a_rolebinding_subject_in_another_teams_namespace_is_refused():
    binding = changed(
        find(fraud_stack(), "fraud-binding"),
        lambda p: p["subjects"].append({"kind": "ServiceAccount", "name": "spark", "namespace": "dagger-growth"}),
    )
    found = violations_of(binding, rules.TEAM_ISOLATION)
    assert len(found) == 1 and "subjects[1].namespace = 'dagger-growth' names team growth's" in found[0]


def test_an_object_in_another_teams_namespace_is_refused():
    deployment = changed(find(fraud_stack(), "fraud-master"), lambda p: p["metadata"].update(namespace="dagger-growth"))
    assert (
        "metadata.namespace = 'dagger-growth' names team growth's" in violations_of(deployment, rules.TEAM_ISOLATION)[0]
    )


@pytest.mark.parametrize("namespace", ["kube-system", "default", None])
def test_a_team_object_outside_the_teams_namespace_is_refused(namespace):
    def move(p):
        if namespace is None:
            p["metadata"].pop("namespace")
        else:
            p["metadata"]["namespace"] = namespace

    deployment = changed(find(fraud_stack(), "fraud-master"), move)
    found = violations_of(deployment, rules.TEAM_ISOLATION)
    assert len(found) == 1 and found[0].endswith("; the fraud stack's objects live in dagger-fraud")
    assert (f"metadata.namespace is {namespace!r}" if namespace else "metadata.namespace is not set") in found[0]


def test_cluster_scoped_objects_have_no_namespace_to_check():
    role = res(
        "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole",
        "fraud-reader",
        {"kind": "ClusterRole", "metadata": {"name": "dagger-fraud-reader", "labels": K8S_LABELS}, "rules": []},
    )
    assert check(role) == []


def test_a_firewall_admitting_another_teams_range_is_refused():
    firewall = changed(
        find(fraud_stack(), "fraud-internal"), lambda p: p.update(sourceRanges=["10.64.16.0/20", "10.64.40.0/24"])
    )
    assert violations_of(firewall, rules.TEAM_ISOLATION) == [
        f"{rules.TEAM_ISOLATION}: {firewall.urn}: sourceRanges[1] = 10.64.40.0/24 admits team growth's range "
        "10.64.40.0/22"
    ]
    everything = changed(find(fraud_stack(), "fraud-internal"), lambda p: p.update(sourceRanges=["10.0.0.0/8"]))
    assert len(violations_of(everything, rules.TEAM_ISOLATION)) == 2  # fraud-ops and growth


def test_a_network_policy_admitting_another_teams_range_is_refused():
    def egress_to(cidr: str, excepted: list[str] | None = None):
        block = {"cidr": cidr, **({"except": excepted} if excepted else {})}
        return lambda p: p["spec"].update(policyTypes=["Egress"], egress=[{"to": [{"ipBlock": block}]}])

    allow = find(fraud_stack(), "fraud-allow-spark")
    growth = changed(allow, egress_to("10.64.40.0/22"))
    assert violations_of(growth, rules.TEAM_ISOLATION) == [
        f"{rules.TEAM_ISOLATION}: {growth.urn}: spec.egress[0].to[0].ipBlock.cidr = 10.64.40.0/22 admits team "
        "growth's range 10.64.40.0/22"
    ]
    carved = changed(allow, egress_to("10.64.0.0/16", ["10.64.40.0/22", "10.64.48.0/22"]))
    assert violations_of(carved, rules.TEAM_ISOLATION) == []
    ingress = changed(allow, lambda p: p["spec"].update(ingress=[{"from": [{"ipBlock": {"cidr": "10.64.48.0/24"}}]}]))
    assert (
        "spec.ingress[0].from[0].ipBlock.cidr = 10.64.48.0/24 admits team fraud-ops's"
        in violations_of(ingress, rules.TEAM_ISOLATION)[0]
    )
    own = changed(allow, egress_to("10.64.16.0/20"))
    assert violations_of(own, rules.TEAM_ISOLATION) == []


def test_a_deny_rule_over_every_range_grants_nothing():
    assert violations_of(find(fraud_stack(), "fraud-deny-all"), rules.TEAM_ISOLATION) == []


def test_a_project_wide_role_is_refused_because_it_reaches_every_team():
    grant = changed(find(fraud_stack(), "fraud-logs"), lambda p: p.update(role="roles/storage.objectAdmin"))
    assert "grants roles/storage.objectAdmin on the whole project" in violations_of(grant, rules.TEAM_ISOLATION)[0]
    gke = changed(find(fraud_stack(), "fraud-logs"), lambda p: p.update(role="roles/container.developer"))
    assert violations_of(gke, rules.TEAM_ISOLATION)


def test_the_platform_stack_is_not_a_team():
    grant = res(
        "gcp:projects/iAMMember:IAMMember",
        "ci",
        {"project": PROJECT, "role": "roles/container.admin", "member": "serviceAccount:ci@x"},
        stack="platform",
    )
    assert violations_of(grant, rules.TEAM_ISOLATION, team="platform") == []


# -- labels ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["fraud-checkpoints", "fraud-worker-0"])
@pytest.mark.parametrize("missing", ["team", "tier", "managed-by"])
def test_a_gcp_resource_without_its_labels_is_refused(name, missing):
    r = changed(find(fraud_stack(), name), lambda p: p["labels"].pop(missing))
    found = violations_of(r, rules.LABELS_PRESENT)
    assert len(found) == 1 and f"labels lacks {missing}" in found[0]


def test_a_node_pool_carries_gcp_labels_not_only_node_labels():
    pool = changed(find(fraud_stack(), "fraud-pool"), lambda p: p["nodeConfig"].pop("resourceLabels"))
    assert "nodeConfig.resourceLabels lacks team, tier, managed-by" in violations_of(pool, rules.LABELS_PRESENT)[0]


def test_a_label_naming_another_team_or_breaking_gcps_rules_is_refused():
    bucket = changed(find(fraud_stack(), "fraud-checkpoints"), lambda p: p["labels"].update(team="growth"))
    assert "labels.team is 'growth' in the fraud stack" in violations_of(bucket, rules.LABELS_PRESENT)[0]
    bucket = changed(find(fraud_stack(), "fraud-checkpoints"), lambda p: p["labels"].update(cost_center="CC 5100"))
    assert "labels.cost_center = 'CC 5100' breaks GCP's label rules" in violations_of(bucket, rules.LABELS_PRESENT)[0]


@pytest.mark.parametrize("key", ["daggers.dev/team", "team"])
def test_a_kubernetes_object_needs_a_team_label_under_either_key(key):
    deployment = find(fraud_stack(), "fraud-master")
    labelled = changed(deployment, lambda p: p["metadata"].update(labels={key: "fraud"}))
    assert violations_of(labelled, rules.LABELS_PRESENT) == []
    bare = changed(deployment, lambda p: p["metadata"].pop("labels"))
    assert (
        "metadata.labels lacks a team label (daggers.dev/team or team)" in violations_of(bare, rules.LABELS_PRESENT)[0]
    )
    other = changed(deployment, lambda p: p["metadata"].update(labels={key: "growth"}))
    assert f"metadata.labels.{key} is 'growth' in the fraud stack" in violations_of(other, rules.LABELS_PRESENT)[0]


def test_resources_without_labels_in_gcp_are_not_asked_for_them():
    for name in ("fraud-sa", "fraud-subnet", "fraud-internal", "fraud-checkpoints-writer"):
        assert violations_of(find(fraud_stack(), name), rules.LABELS_PRESENT) == []


# -- names within limits --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "ab",
        "a" * 64,
        "Daggers-Checkpoints",
        "-daggers",
        "daggers-",
        "goog-daggers",
        "my-google-bucket",
        "daggers checkpoints",
    ],
)
def test_a_bucket_name_gcp_refuses_is_refused(name):
    bucket = changed(find(fraud_stack(), "fraud-checkpoints"), lambda p: p.update(name=name))
    found = violations_of(bucket, rules.NAME_LIMITS)
    assert len(found) == 1 and f"name {name!r}" in found[0] and "is not a bucket name" in found[0]


@pytest.mark.parametrize("name", ["abc", "a" * 63, "a.b_c-d"])
def test_bucket_names_at_the_limits_pass(name):
    bucket = changed(find(fraud_stack(), "fraud-checkpoints"), lambda p: p.update(name=name))
    assert violations_of(bucket, rules.NAME_LIMITS) == []


def test_an_auto_named_bucket_is_judged_by_the_name_pulumi_will_give_it():
    bucket = changed(find(fraud_stack(), "fraud-checkpoints"), lambda p: p.pop("name"))
    assert violations_of(bucket, rules.NAME_LIMITS) == []  # fraud-checkpoints-xxxxxxx
    long = Resource(bucket.type, urn(bucket.type, "c" * 56), bucket.props)
    assert "auto-name from" in violations_of(long, rules.NAME_LIMITS)[0]


@pytest.mark.parametrize(
    "account_id, ok",
    [
        ("dagger-fraud", True),
        ("abcdef", True),
        ("a" * 30, True),
        ("abcde", False),
        ("a" * 31, False),
        ("1dagger", False),
        ("dagger_fraud", False),
        ("Dagger-fraud", False),
        ("dagger-", False),
    ],
)
def test_service_account_ids_are_6_to_30_characters(account_id, ok):
    sa = changed(find(fraud_stack(), "fraud-sa"), lambda p: p.update(accountId=account_id))
    found = violations_of(sa, rules.NAME_LIMITS)
    assert (found == []) == ok, found
    if not ok:
        assert f"accountId {account_id!r}" in found[0] and "6 to 30" in found[0]


@pytest.mark.parametrize("resource", ["fraud-worker-0", "fraud-subnet", "fraud-internal"])
@pytest.mark.parametrize("name", ["a" * 64, "1worker", "Worker", "worker-", "dagger_fraud"])
def test_compute_names_are_rfc1035_labels(resource, name):
    r = changed(find(fraud_stack(), resource), lambda p: p.update(name=name))
    found = violations_of(r, rules.NAME_LIMITS)
    assert len(found) == 1 and "is not an RFC 1035 name" in found[0]
    ok = changed(find(fraud_stack(), resource), lambda p: p.update(name="a" * 63))
    assert violations_of(ok, rules.NAME_LIMITS) == []


def test_node_pool_and_namespace_names_are_within_their_limits():
    pool = changed(find(fraud_stack(), "fraud-pool"), lambda p: p.update(name="p" * 41))
    assert "at most 40 characters" in violations_of(pool, rules.NAME_LIMITS)[0]
    ns = changed(find(fraud_stack(), "fraud-ns"), lambda p: p["metadata"].update(name="Dagger.Fraud"))
    assert "is not a namespace name" in violations_of(ns, rules.NAME_LIMITS)[0]


# -- no external IPs, no ClusterRoleBinding -------------------------------------------------------


def test_an_instance_with_an_external_address_is_refused():
    worker = changed(
        find(fraud_stack(), "fraud-worker-0"), lambda p: p["networkInterfaces"][0].update(accessConfigs=[{}])
    )
    assert violations_of(worker, rules.NO_EXTERNAL_IPS) == [
        f"{rules.NO_EXTERNAL_IPS}: {worker.urn}: networkInterfaces[0].accessConfigs gives the instance an "
        "external address; remove it"
    ]
    v6 = changed(
        find(fraud_stack(), "fraud-worker-0"),
        lambda p: p["networkInterfaces"][0].update(ipv6AccessConfigs=[{"networkTier": "PREMIUM"}]),
    )
    assert "ipv6AccessConfigs" in violations_of(v6, rules.NO_EXTERNAL_IPS)[0]
    template = res(
        "gcp:compute/instanceTemplate:InstanceTemplate",
        "tpl",
        {
            "name": "dagger-fraud-worker",
            "labels": LABELS,
            "networkInterfaces": [{"subnetwork": "dagger-fraud", "accessConfigs": [{"natIp": "1.2.3.4"}]}],
        },
    )
    assert violations_of(template, rules.NO_EXTERNAL_IPS)


def test_a_cluster_role_binding_is_refused():
    crb = res(
        "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding",
        "fraud-crb",
        {
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "dagger-fraud", "labels": K8S_LABELS},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
            "subjects": [{"kind": "ServiceAccount", "name": "spark", "namespace": "dagger-fraud"}],
        },
    )
    found = violations_of(crb, rules.NO_CLUSTER_ROLE_BINDINGS)
    assert len(found) == 1 and "grants in every namespace" in found[0]
    assert violations_of(find(fraud_stack(), "fraud-binding"), rules.NO_CLUSTER_ROLE_BINDINGS) == []


# -- the stack rule: quota and default-deny per namespace -----------------------------------------


def stack_violations(stack: list[Resource]) -> list[str]:
    found = [v for v in rules.namespace_guards(stack, "fraud", TEAMS)]
    for v in found:
        assert str(v).startswith(f"{rules.NAMESPACE_GUARDS}: {v.urn}: ")
    return [str(v) for v in found]


def without(stack: list[Resource], *names: str) -> list[Resource]:
    return [r for r in stack if r.name not in names]


def test_a_namespace_without_a_quota_is_refused():
    ns_urn = find(fraud_stack(), "fraud-ns").urn
    assert stack_violations(without(fraud_stack(), "fraud-quota")) == [
        f"{rules.NAMESPACE_GUARDS}: {ns_urn}: namespace dagger-fraud has no ResourceQuota with hard limits"
    ]


def test_a_namespace_without_a_default_deny_policy_is_refused():
    found = stack_violations(without(fraud_stack(), "fraud-default-deny"))
    assert len(found) == 1 and "namespace dagger-fraud has no default-deny NetworkPolicy" in found[0]


@pytest.mark.parametrize(
    "change",
    [
        lambda s: s.update(podSelector={"matchLabels": {"app": "spark"}}),
        lambda s: s.update(policyTypes=["Egress"]),
        lambda s: s.update(ingress=[{"from": [{"ipBlock": {"cidr": "0.0.0.0/0"}}]}]),
        lambda s: s.update(egress=[{}]),
        lambda s: s.pop("podSelector"),
    ],
)
def test_a_policy_that_lets_traffic_in_is_not_a_default_deny(change):
    stack = fraud_stack()
    deny = find(stack, "fraud-default-deny")
    stack[stack.index(deny)] = changed(deny, lambda p: change(p["spec"]))
    assert len(stack_violations(stack)) == 1


def test_a_quota_or_policy_in_another_namespace_does_not_count():
    stack = fraud_stack()
    quota = find(stack, "fraud-quota")
    stack[stack.index(quota)] = changed(quota, lambda p: p["metadata"].update(namespace="default"))
    assert "no ResourceQuota" in stack_violations(stack)[0]
    empty = changed(find(fraud_stack(), "fraud-quota"), lambda p: p["spec"].update(hard={}))
    assert stack_violations([*without(fraud_stack(), "fraud-quota"), empty])


def test_every_namespace_is_checked():
    second = res(
        "kubernetes:core/v1:Namespace",
        "fraud-ns-2",
        {"kind": "Namespace", "metadata": {"name": "dagger-fraud-jobs", "labels": K8S_LABELS}},
    )
    assert len(stack_violations([*fraud_stack(), second])) == 2


def test_unknown_values_are_not_judged_during_a_preview():
    bucket = changed(
        find(fraud_stack(), "fraud-checkpoints"),
        lambda p: p.update(publicAccessPrevention=rules.UNKNOWN, labels=rules.UNKNOWN),
    )
    assert check(bucket) == []


# -- every sample team's declared resources pass every rule ---------------------------------------


@pytest.fixture(scope="module")
def declared():
    """Each sample team's program under Pulumi's mocks, as the rules see it."""
    platform = spec.load_platform()
    return {s.name: [Resource(d.type, d.urn, d.inputs) for d in declare(s, platform)] for s in spec.load_all()}


@pytest.mark.parametrize("team", [s.name for s in spec.load_all()])
def test_every_sample_teams_declared_resources_pass_every_rule(declared, team):
    stack = declared[team]
    from infra.policy.pack import load_teams

    teams = load_teams()
    assert [str(v) for v in rules.check_stack(stack, team, teams)] == []
    types = {r.type for r in stack}
    # not vacuous: the rules saw the team's identity and bucket
    assert {"gcp:serviceaccount/account:Account", "gcp:storage/bucket:Bucket"} <= types, sorted(types)


def test_the_platform_stack_passes_every_rule():
    stack = [Resource(d.type, d.urn, d.inputs) for d in declare_platform(spec.load_platform())]
    assert {rules.stack_of(r.urn) for r in stack} == {rules.PLATFORM_STACK}
    from infra.policy.pack import load_teams

    assert [str(v) for v in rules.check_stack(stack, teams=load_teams())] == []


@pytest.mark.parametrize("team", [s.name for s in spec.load_all()])
def test_the_declared_urns_name_the_teams_stack(declared, team):
    """The pack reads the team from the URN's stack, as `pulumi up -s <team>` names it."""
    assert {rules.stack_of(r.urn) for r in declared[team]} == {team}


def test_a_gke_team_declares_a_guarded_namespace(declared):
    gke = [s for s in spec.load_all() if s.spark.flavour == "gke"]
    for s in gke:
        namespaces = [r for r in declared[s.name] if r.type == rules.NAMESPACE]
        assert [r.props["metadata"]["name"] for r in namespaces] == [s.namespace]


# -- the CrossGuard pack --------------------------------------------------------------------------


class _Served(Exception):
    """Raised where the pack would start serving: the test stops there, no port is opened."""


@pytest.fixture
def servicer(monkeypatch):
    import pulumi_policy.policy as policy_module

    captured = {}

    class FakeServer:
        def add_insecure_port(self, address):
            return 0

        def start(self):
            raise _Served()

    monkeypatch.setattr(policy_module.grpc, "server", lambda *a, **k: FakeServer())
    monkeypatch.setattr(
        policy_module.analyzer_pb2_grpc,
        "add_AnalyzerServicer_to_server",
        lambda s, server: captured.setdefault("servicer", s),
    )
    monkeypatch.setattr(sys, "path", list(sys.path))
    with pytest.raises(_Served):
        runpy.run_path(str(spec.INFRA / "policy" / "__main__.py"), run_name="__main__")
    return captured["servicer"]


def test_the_pack_registers_every_rule_as_a_mandatory_policy(servicer):
    info = servicer.GetAnalyzerInfo(None, None)
    assert info.name == "daggers-platform"
    kinds = {p.name: (p.policy_type, p.enforcementLevel) for p in info.policies}
    assert kinds == {
        **{r.name: (proto.PolicyType.POLICY_TYPE_RESOURCE, proto.MANDATORY) for r in rules.RESOURCE_RULES},
        **{r.name: (proto.PolicyType.POLICY_TYPE_STACK, proto.MANDATORY) for r in rules.STACK_RULES},
    }


def _struct(props: dict):
    s = struct_pb2.Struct()
    s.update(props)
    return s


def test_the_pack_reports_a_violation_through_the_engines_protocol(servicer):
    bucket = changed(find(fraud_stack(), "fraud-checkpoints"), lambda p: p.update(publicAccessPrevention="inherited"))
    response = servicer.Analyze(
        proto.AnalyzeRequest(
            type=bucket.type, urn=bucket.urn, name=bucket.name, properties=_struct(dict(bucket.props))
        ),
        None,
    )
    assert [(d.policyName, d.urn, d.enforcementLevel) for d in response.diagnostics] == [
        (rules.NO_PUBLIC_BUCKETS, bucket.urn, proto.MANDATORY)
    ]
    assert f"{bucket.urn}: publicAccessPrevention is 'inherited'" in response.diagnostics[0].message


def test_the_pack_leaves_values_unknown_during_a_preview_alone(servicer):
    from pulumi.runtime import proto
    from pulumi_policy.proxy import UNKNOWN_STRING_VALUE

    bucket = changed(
        find(fraud_stack(), "fraud-checkpoints"), lambda p: p.update(publicAccessPrevention=UNKNOWN_STRING_VALUE)
    )
    response = servicer.Analyze(
        proto.AnalyzeRequest(
            type=bucket.type, urn=bucket.urn, name=bucket.name, properties=_struct(dict(bucket.props))
        ),
        None,
    )
    assert list(response.diagnostics) == []


def test_the_pack_checks_a_whole_stack_through_the_engines_protocol(servicer):
    stack = without(fraud_stack(), "fraud-quota")
    request = proto.AnalyzeStackRequest(
        resources=[
            proto.AnalyzerResource(type=r.type, urn=r.urn, name=r.name, properties=_struct(dict(r.props)))
            for r in stack
        ]
    )
    response = servicer.AnalyzeStack(request, None)
    assert [(d.policyName, d.urn) for d in response.diagnostics] == [
        (rules.NAMESPACE_GUARDS, find(stack, "fraud-ns").urn)
    ]
    assert "namespace dagger-fraud has no ResourceQuota" in response.diagnostics[0].message
    clean = proto.AnalyzeStackRequest(
        resources=[
            proto.AnalyzerResource(type=r.type, urn=r.urn, name=r.name, properties=_struct(dict(r.props)))
            for r in fraud_stack()
        ]
    )
    assert list(servicer.AnalyzeStack(clean, None).diagnostics) == []


def test_the_pack_knows_every_committed_team_by_its_exact_identities():
    from infra.policy.pack import load_teams

    teams = load_teams()
    assert teams.names == {p.stem for p in spec.TEAMS_DIR.glob("*.yaml")}
    assert teams.get("fraud") == rules.TeamIdentities(
        name="fraud",
        cidr=ipaddress.IPv4Network("10.64.16.0/20"),
        namespace="dagger-fraud",
        service_account="dagger-fraud@daggers-platform.iam.gserviceaccount.com",
        service_account_resource="projects/daggers-platform/serviceAccounts/"
        "dagger-fraud@daggers-platform.iam.gserviceaccount.com",
        bucket="daggers-platform-fraud-checkpoints",
        workload_pool="daggers-platform.svc.id.goog",
        owners_group="dagger-fraud-owners@daggers.dev",
    )


# -- the registry: teams told apart by identities, not by name ------------------------------------

FRAUD_SPARK = """\
team: fraud-spark
owners: ["@gojek/fraud-engineering"]
tier: standard
network: {cidr: 10.64.48.0/20}
"""


@pytest.fixture(scope="module")
def fraud_and_fraud_spark():
    """fraud (committed) and a new team fraud-spark, both in the registry, as their programs declare them."""
    from infra.mocks import declare
    from infra.policy.pack import load_teams

    platform = spec.load_platform()
    fraud = spec.load(spec.TEAMS_DIR / "fraud.yaml", platform)
    fraud_spark = spec.parse(FRAUD_SPARK, source="infra/teams/fraud-spark.yaml", platform=platform)
    committed = load_teams()
    teams = Teams({**committed.identities, **Teams.of(PROJECT, {"fraud-spark": fraud_spark.cidr}).identities}, PROJECT)
    stacks = {s.name: [Resource(d.type, d.urn, d.inputs) for d in declare(s, platform)] for s in (fraud, fraud_spark)}
    return teams, stacks


def test_a_new_team_whose_name_extends_another_leaves_both_stacks_valid(fraud_and_fraud_spark):
    teams, stacks = fraud_and_fraud_spark
    assert {"fraud", "fraud-spark"} <= teams.names
    for team, stack in stacks.items():
        assert [str(v) for v in rules.check_stack(stack, team, teams)] == [], team
    # not vacuous: fraud's stack has names that start with dagger-fraud-spark (its Spark machines)
    names = [v for r in stacks["fraud"] for _, v in rules._strings(r.props)]
    assert any(v.startswith("dagger-fraud-spark") for v in names), sorted(set(names))[:20]


def _regrant(stack: list[Resource], resource_type: str, member: str) -> Resource:
    grant = next(r for r in stack if r.type == resource_type)
    return changed(grant, lambda p: p.update(member=member))


def test_fraud_and_fraud_spark_each_fail_when_they_grant_to_the_other(fraud_and_fraud_spark):
    teams, stacks = fraud_and_fraud_spark
    cases = [
        (
            "fraud",
            "gcp:storage/bucketIAMMember:BucketIAMMember",
            f"serviceAccount:dagger-fraud-spark@{PROJECT}.iam.gserviceaccount.com",
            "fraud-spark",
        ),
        (
            "fraud-spark",
            "gcp:storage/bucketIAMMember:BucketIAMMember",
            f"serviceAccount:dagger-fraud@{PROJECT}.iam.gserviceaccount.com",
            "fraud",
        ),
        (
            "fraud-spark",
            "gcp:serviceaccount/iAMMember:IAMMember",
            f"serviceAccount:{PROJECT}.svc.id.goog[dagger-fraud/dagger]",
            "fraud",
        ),
    ]
    for team, resource_type, member, other in cases:
        grant = _regrant(stacks[team], resource_type, member)
        found = [str(v) for v in rules.check_resource(grant.type, grant.props, grant.urn, team, teams)]
        assert any(f"{rules.TEAM_ISOLATION}: " in v and f"names team {other}'s resources" in v for v in found), found
        assert any(f"{rules.OWN_MEMBERS}: " in v and f"is not one of team {team}'s identities" in v for v in found), (
            found
        )


# -- grants go to the team's own identities only --------------------------------------------------

OWN_WI = f"serviceAccount:{PROJECT}.svc.id.goog[dagger-fraud/dagger]"


@pytest.mark.parametrize(
    "member",
    [
        f"serviceAccount:{SA}",
        OWN_WI,
        f"serviceAccount:{PROJECT}.svc.id.goog[dagger-fraud/mirror]",  # any account in the team's namespace
    ],
)
def test_a_grant_to_the_teams_own_identities_passes(member):
    grant = changed(find(fraud_stack(), "fraud-checkpoints-writer"), lambda p: p.update(member=member))
    assert violations_of(grant, rules.OWN_MEMBERS) == []


@pytest.mark.parametrize(
    "member",
    [
        "user:alice@gojek.com",
        "group:fraud-engineering@gojek.com",
        "domain:gojek.com",
        "principal://iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/gh/subject/repo:gojek/x",
        "principalSet://iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/gh/*",
        "allUsers",
        "allAuthenticatedUsers",
        f"serviceAccount:dagger-growth@{PROJECT}.iam.gserviceaccount.com",  # another team's account
        f"serviceAccount:dagger-growth-2@{PROJECT}.iam.gserviceaccount.com",  # a second account of another team
        f"serviceAccount:dagger-fraud-2@{PROJECT}.iam.gserviceaccount.com",  # an account the stack did not create
        f"serviceAccount:ci@{PROJECT}.iam.gserviceaccount.com",
        "serviceAccount:dagger-fraud@other-project.iam.gserviceaccount.com",
        f"serviceAccount:{PROJECT}.svc.id.goog[dagger-growth/dagger]",  # another team's namespace
        f"serviceAccount:{PROJECT}.svc.id.goog[kube-system/default]",
        "serviceAccount:other-project.svc.id.goog[dagger-fraud/dagger]",  # another project's pool
        f"serviceaccount:{SA}",  # other spellings of its own
        f"serviceAccount:{SA.upper()}",
        f" serviceAccount:{SA}",
        f"serviceAccount:{SA}.",
        f"serviceAccount:{SA}\n",
        f"{OWN_WI}\n",
        OWN_WI.replace("/dagger]", "/dagger\n]"),
        f"serviceAccount:{SA.replace('a', 'а', 1)}",  # Cyrillic a
        f"deleted:serviceAccount:{SA}?uid=123",
        f"projectOwner:{PROJECT}",
    ],
)
def test_a_grant_to_anyone_outside_the_team_is_refused(member):
    grant = changed(find(fraud_stack(), "fraud-checkpoints-writer"), lambda p: p.update(member=member))
    found = violations_of(grant, rules.OWN_MEMBERS)
    assert len(found) == 1 and f"member = {member!r} is not one of team fraud's identities" in found[0], found
    # the same member in a list of members, or behind a condition, is refused all the same
    conditional = changed(
        find(fraud_stack(), "fraud-logs"),
        lambda p: p.update(
            member=member,
            condition={"title": "never", "expression": "request.time < timestamp('2000-01-01T00:00:00Z')"},
        ),
    )
    assert violations_of(conditional, rules.OWN_MEMBERS)
    members = res(
        "gcp:secretmanager/secretIamMember:SecretIamMember",
        "s",
        {"secretId": "x", "role": "r", "members": [f"serviceAccount:{SA}", member]},
    )
    assert any("members[1] = " in v for v in violations_of(members, rules.OWN_MEMBERS))


def test_members_are_found_wherever_a_resource_keeps_them():
    policy = res(
        "gcp:storage/bucketIAMPolicy:BucketIAMPolicy",
        "pol",
        {
            "bucket": f"{PROJECT}-fraud-checkpoints",
            "policyData": '{"bindings":[{"role":"roles/storage.objectViewer","members":["user:eve@x.com"]}]}',
        },
    )
    found = violations_of(policy, rules.OWN_MEMBERS)
    assert any("policyData.bindings[0].members[0] = 'user:eve@x.com'" in v for v in found), found
    assert any("BucketIAMPolicy is not a grant a team stack makes" in v for v in found), found
    dataset = res(
        "gcp:bigquery/datasetAccess:DatasetAccess",
        "d",
        {"datasetId": "x", "role": "READER", "userByEmail": "eve@gojek.com"},
    )
    assert any("userByEmail = 'eve@gojek.com'" in v for v in violations_of(dataset, rules.OWN_MEMBERS))
    acl = res(
        "gcp:storage/bucketAccessControl:BucketAccessControl",
        "acl",
        {"bucket": f"{PROJECT}-fraud-checkpoints", "entity": "user-eve@gojek.com", "role": "READER"},
    )
    assert any("ACLs grant outside IAM" in v for v in violations_of(acl, rules.OWN_MEMBERS))
    anywhere = res(
        "gcp:pubsub/topicIAMMember:TopicIAMMember",
        "t",
        {"topic": "x", "role": "roles/pubsub.publisher", "member": "user:eve@gojek.com"},
    )
    assert len(violations_of(anywhere, rules.OWN_MEMBERS)) == 2  # the member, and a grant on no resource of its own
    assert rules.is_iam("gcp:secretmanager/secretIamMember:SecretIamMember")


@pytest.mark.parametrize(
    "target, value",
    [
        ("fraud-checkpoints-writer", {"bucket": "some-shared-bucket"}),
        (
            "fraud-wi",
            {
                "serviceAccountId": f"projects/{PROJECT}/serviceAccounts/daggers-gke-system@{PROJECT}.iam.gserviceaccount.com"
            },
        ),
        ("fraud-logs", {"project": "another-project"}),
    ],
)
def test_a_grant_on_anything_but_the_teams_own_resources_is_refused(target, value):
    grant = changed(find(fraud_stack(), target), lambda p: p.update(value))
    ((key, got),) = value.items()
    found = violations_of(grant, rules.OWN_MEMBERS)
    assert len(found) == 1 and f"{key} = {got!r} is not the fraud team's own" in found[0], found


@pytest.mark.parametrize(
    "subject, ok",
    [
        ({"kind": "ServiceAccount", "name": "spark", "namespace": "dagger-fraud"}, True),
        ({"kind": "Group", "name": "dagger-fraud-owners@daggers.dev", "apiGroup": "rbac.authorization.k8s.io"}, True),
        ({"kind": "Group", "name": "dagger-growth-owners@daggers.dev", "apiGroup": "rbac.authorization.k8s.io"}, False),
        ({"kind": "Group", "name": "DAGGER-FRAUD-OWNERS@daggers.dev", "apiGroup": "rbac.authorization.k8s.io"}, False),
        ({"kind": "Group", "name": "system:authenticated", "apiGroup": "rbac.authorization.k8s.io"}, False),
        ({"kind": "Group", "name": "system:serviceaccounts", "apiGroup": "rbac.authorization.k8s.io"}, False),
        ({"kind": "User", "name": "alice@gojek.com", "apiGroup": "rbac.authorization.k8s.io"}, False),
        ({"kind": "ServiceAccount", "name": "default", "namespace": "kube-system"}, False),
        ({"kind": "ServiceAccount", "name": "spark"}, False),
        ({"kind": "ServiceAccount", "name": "spark\n", "namespace": "dagger-fraud"}, False),
    ],
)
def test_a_rolebinding_names_only_the_teams_accounts_and_owners_group(subject, ok):
    binding = changed(find(fraud_stack(), "fraud-binding"), lambda p: p.update(subjects=[subject]))
    found = violations_of(binding, rules.OWN_MEMBERS)
    assert (found == []) == ok, found
    if not ok:
        assert f"subjects[0] = {subject['kind']} {subject['name']!r} is not one of team fraud's identities" in found[0]


def test_a_team_without_a_granted_owners_group_may_bind_no_group():
    binding = res(
        "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding",
        "b",
        {
            "metadata": {"name": "owners", "namespace": "dagger-fraud-ops", "labels": {"team": "fraud-ops"}},
            "roleRef": {"kind": "Role", "name": "x"},
            "subjects": [{"kind": "Group", "name": "dagger-fraud-ops-owners@daggers.dev"}],
        },
        stack="fraud-ops",
    )
    found = violations_of(binding, rules.OWN_MEMBERS, team="fraud-ops")
    assert len(found) == 1 and "owners' group (none granted)" in found[0]


# -- reserved names and the registry --------------------------------------------------------------


def stack_named(name: str) -> list[Resource]:
    return [Resource(r.type, urn(r.type, r.name, stack=name), r.props) for r in fraud_stack()]


@pytest.mark.parametrize(
    "name", ["default", "kube-system", "kube-fraud", "gke-ops", "istio-system", "google-ads", "system"]
)
def test_a_team_stack_with_a_reserved_name_fails_the_pack(name):
    teams = Teams.of(PROJECT, {name: "10.64.60.0/22"})
    found = [str(v) for v in rules.registered_team(stack_named(name), name, teams)]
    assert len(found) == 1 and found[0].startswith(f"{rules.REGISTERED_TEAM}: ") and "reserved" in found[0], found


def test_a_team_named_platform_is_a_team_and_fails_while_the_platform_stack_passes():
    registered = Teams.of(PROJECT, {"platform": "10.64.60.0/22"})
    assert rules.is_team_stack("platform", registered) and not rules.is_team_stack("platform", TEAMS)
    found = [str(v) for v in rules.registered_team(stack_named("platform"), "platform", registered)]
    assert len(found) == 1 and "'platform' is reserved" in found[0]
    assert rules.registered_team(stack_named("platform"), "platform", TEAMS) == []
    # a registered `platform` team is held to the team rules: its grants to others are refused
    grant = changed(find(stack_named("platform"), "fraud-checkpoints-writer"), lambda p: p.update(member="user:x@y.z"))
    assert [
        v
        for v in rules.check_resource(grant.type, grant.props, grant.urn, "platform", registered)
        if v.rule == rules.OWN_MEMBERS
    ]


def test_a_stack_the_registry_does_not_know_fails_the_pack():
    found = [str(v) for v in rules.registered_team(stack_named("search"), "search", TEAMS)]
    assert len(found) == 1 and "stack search is not a team of the platform's registry" in found[0]
    assert rules.registered_team(fraud_stack(), "fraud", TEAMS) == []


# -- owners' access: Google Groups for RBAC -------------------------------------------------------


def test_the_platform_cluster_resolves_google_groups_and_each_binding_names_the_granted_group():
    import yaml

    from infra.mocks import declare, declare_platform

    platform = spec.load_platform()
    (cluster,) = [d for d in declare_platform(platform) if d.type == "gcp:container/cluster:Cluster"]
    security_group = cluster.get("authenticatorGroupsConfig.securityGroup")
    assert security_group == "gke-security-groups@daggers.dev"
    domain = security_group.split("@")[1]
    gke = [s for s in spec.load_all() if s.spark.flavour == "gke"]
    assert gke
    for s in gke:
        granted = yaml.safe_load((spec.INFRA / "grants" / f"{s.name}.yaml").read_text())["rbac_group"]
        bindings = [d for d in declare(s, platform) if d.type == "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding"]
        assert [b.inputs["subjects"] for b in bindings] == [
            [{"kind": "Group", "name": granted, "apiGroup": "rbac.authorization.k8s.io"}]
        ], s.name
        assert granted.split("@")[1] == domain, f"{granted}: not a group the cluster's RBAC resolves"


def test_a_team_without_a_grant_binds_nobody(fraud_and_fraud_spark):
    _, stacks = fraud_and_fraud_spark
    types = [r.type for r in stacks["fraud-spark"]]
    assert "kubernetes:core/v1:Namespace" in types
    assert "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding" not in types


# -- Spark's own authentication -------------------------------------------------------------------

import base64  # noqa: E402

import javaproperties  # noqa: E402

SPARK_SECRET_VALUE = "S" * 48  # stand-ins, recognisable in a message if one leaked
SPARK_UI_KEY_VALUE = "K" * 64
SPARK_SETTINGS = {
    "spark.authenticate": "true",
    "spark.authenticate.secret": SPARK_SECRET_VALUE,
    "spark.network.crypto.enabled": "true",
    "spark.network.crypto.saslFallback": "false",
    "spark.master.rest.enabled": "false",
    "spark.ui.killEnabled": "false",
    "spark.ui.filters": "org.apache.spark.ui.JWSFilter",
    "spark.org.apache.spark.ui.JWSFilter.param.secretKey": SPARK_UI_KEY_VALUE,
}


def spark_conf_secret(settings: dict, name: str = "spark-defaults", encoded: bool = False) -> Resource:
    text = javaproperties.dumps(settings, timestamp=False)
    data = (
        {"data": {"spark-defaults.conf": base64.b64encode(text.encode()).decode()}}
        if encoded
        else {"stringData": {"spark-defaults.conf": text}}
    )
    return res(
        "kubernetes:core/v1:Secret",
        f"fraud-{name}",
        {"kind": "Secret", "metadata": {"namespace": "dagger-fraud", "name": name, "labels": K8S_LABELS}, **data},
    )


def spark_daemon(
    role: str = "worker",
    *,
    secret: str = "spark-defaults",
    read_only: bool = True,
    volume: dict | None = None,
    args_extra: tuple = ("--properties-file", "/etc/spark-auth/spark-defaults.conf"),
    run_as: dict | None = None,
) -> Resource:
    cls = {"master": "org.apache.spark.deploy.master.Master", "worker": "org.apache.spark.deploy.worker.Worker"}[role]
    return res(
        "kubernetes:apps/v1:Deployment",
        f"fraud-spark-{role}",
        {
            "kind": "Deployment",
            "metadata": {"namespace": "dagger-fraud", "name": f"spark-{role}", "labels": K8S_LABELS},
            "spec": {
                "template": {
                    "spec": {
                        "securityContext": run_as if run_as is not None else {"runAsNonRoot": True, "runAsUser": 185},
                        "volumes": [volume or {"name": "conf", "secret": {"secretName": secret, "defaultMode": 0o400}}],
                        "containers": [
                            {
                                "name": role,
                                "image": "apache/spark:4.0.0",
                                "command": ["/opt/spark/bin/spark-class", cls],
                                "args": ["--port", "7077", *args_extra],
                                "volumeMounts": [
                                    {"name": "conf", "mountPath": "/etc/spark-auth", "readOnly": read_only}
                                ],
                            }
                        ],
                    }
                }
            },
        },
    )


def spark_stack(*extra: Resource) -> list[Resource]:
    return [*fraud_stack(), spark_conf_secret(SPARK_SETTINGS), spark_daemon("master"), spark_daemon("worker"), *extra]


def spark_violations(stack: list[Resource]) -> list[str]:
    found = [str(v) for v in rules.check_stack(stack, "fraud", TEAMS)]
    for text in found:  # the conf holds secrets: no message quotes one
        assert SPARK_SECRET_VALUE not in text and SPARK_UI_KEY_VALUE not in text, text
    return found


def test_an_authenticated_spark_cluster_passes_as_a_secret_in_either_encoding():
    assert spark_violations(spark_stack()) == []
    encoded = [
        r if r.type != "kubernetes:core/v1:Secret" else spark_conf_secret(SPARK_SETTINGS, encoded=True)
        for r in spark_stack()
    ]
    assert spark_violations(encoded) == []


@pytest.mark.parametrize("key", sorted(SPARK_SETTINGS))
@pytest.mark.parametrize("how", ["dropped", "changed"])
def test_a_spark_conf_without_a_setting_is_refused_naming_it(key, how):
    settings = dict(SPARK_SETTINGS)
    if how == "dropped":
        del settings[key]
    else:
        settings[key] = {"true": "false", "false": "true"}.get(settings[key], "short")
    found = spark_violations([*fraud_stack(), spark_conf_secret(settings), spark_daemon("worker")])
    mine = [v for v in found if key in v]
    # the Secret itself, and the worker that reads it
    assert {v.split(": ")[0] for v in mine} == {rules.SPARK_AUTHENTICATED, rules.SPARK_CONF_DECLARED}, found
    assert any("fraud-spark-defaults" in v for v in mine) and any("fraud-spark-worker" in v for v in mine)


def test_the_ui_filter_may_come_with_others_but_not_be_missing():
    both = dict(SPARK_SETTINGS, **{"spark.ui.filters": "com.example.Audit, org.apache.spark.ui.JWSFilter"})
    assert spark_violations([*fraud_stack(), spark_conf_secret(both), spark_daemon()]) == []
    other = dict(SPARK_SETTINGS, **{"spark.ui.filters": "com.example.Audit"})
    assert any("spark.ui.filters" in v for v in spark_violations([*fraud_stack(), spark_conf_secret(other)]))


def test_a_spark_conf_line_cannot_hide_a_setting_from_the_rule():
    """A value with a newline written by hand: Spark (java.util.Properties) reads one setting,
    spark.authenticate=true\\nx, so authentication is not 'true'."""
    text = javaproperties.dumps(SPARK_SETTINGS, timestamp=False).replace(
        "spark.authenticate=true", "spark.authenticate=true\\\n  x"
    )
    secret = res(
        "kubernetes:core/v1:Secret",
        "fraud-spark-defaults",
        {
            "kind": "Secret",
            "metadata": {"namespace": "dagger-fraud", "name": "spark-defaults", "labels": K8S_LABELS},
            "stringData": {"spark-defaults.conf": text},
        },
    )
    assert any("spark.authenticate must be true" in v for v in spark_violations([*fraud_stack(), secret]))


@pytest.mark.parametrize(
    "worker, why",
    [
        (spark_daemon(args_extra=()), "has no --properties-file"),
        (spark_daemon(read_only=False), "is not on a read-only mount of a Secret volume"),
        (
            spark_daemon(volume={"name": "conf", "configMap": {"name": "spark-defaults"}}),
            "is not on a read-only mount of a Secret volume",
        ),
        (
            spark_daemon(args_extra=("--properties-file", "/tmp/spark-defaults.conf")),
            "is not on a read-only mount of a Secret volume",
        ),
        (spark_daemon(run_as={"runAsNonRoot": False}), "may run as root"),
        (spark_daemon(run_as={"runAsNonRoot": True, "runAsUser": 0}), "may run as root"),
        (spark_daemon(secret="someone-elses"), "which this stack does not declare"),
    ],
    ids=[
        "no-properties-file",
        "writable-mount",
        "config-map-volume",
        "not-mounted",
        "root-allowed",
        "uid-0",
        "undeclared-secret",
    ],
)
def test_a_spark_daemon_without_its_authenticated_conf_is_refused(worker, why):
    stack = [r for r in spark_stack() if r.name != "fraud-spark-worker"] + [worker]
    found = spark_violations(stack)
    assert any("fraud-spark-worker" in v and why in v for v in found), found


def test_a_spark_conf_in_a_config_map_is_refused():
    config_map = res(
        "kubernetes:core/v1:ConfigMap",
        "fraud-spark-conf",
        {
            "kind": "ConfigMap",
            "metadata": {"namespace": "dagger-fraud", "name": "spark-conf", "labels": K8S_LABELS},
            "data": {"spark-defaults.conf": javaproperties.dumps(SPARK_SETTINGS, timestamp=False)},
        },
    )
    assert any("belongs in a Secret" in v for v in spark_violations([*fraud_stack(), config_map]))


def test_a_spark_daemon_started_by_script_or_shell_is_recognised():
    shell = spark_daemon()
    container = shell.props["spec"]["template"]["spec"]["containers"][0]
    container["command"], container["args"] = ["/bin/sh", "-c"], ["exec /opt/spark/sbin/start-worker.sh spark://m:7077"]
    assert any("has no --properties-file" in v for v in spark_violations([*fraud_stack(), shell]))


def test_the_declared_gke_spark_clusters_lose_their_conf_and_the_pack_says_so(declared):
    """The rule on what the stacks really declare: without --properties-file, or with the UI
    filter taken out of the Secret's conf, a gke team's stack fails."""
    from infra.policy.pack import load_teams

    teams = load_teams()
    gke = [t for t, stack in declared.items() if any(r.type == "kubernetes:core/v1:Secret" for r in stack)]
    assert gke
    for team in gke:
        stack = declared[team]

        def without_properties_file(r: Resource) -> Resource:
            if r.type != "kubernetes:apps/v1:Deployment" or not rules.spark_containers(r.type, r.props):
                return r
            return changed(
                r,
                lambda p: p["spec"]["template"]["spec"]["containers"][0].update(
                    args=[
                        a
                        for a in p["spec"]["template"]["spec"]["containers"][0]["args"]
                        if a != "--properties-file" and not a.endswith("spark-defaults.conf")
                    ]
                ),
            )

        def without_filter(r: Resource) -> Resource:
            if r.type != "kubernetes:core/v1:Secret":
                return r
            props = javaproperties.loads(r.props["stringData"]["spark-defaults.conf"])
            del props["spark.ui.filters"]
            return changed(r, lambda p: p["stringData"].update({"spark-defaults.conf": javaproperties.dumps(props)}))

        for tamper, expect in (
            (without_properties_file, "has no --properties-file"),
            (without_filter, "spark.ui.filters must include"),
        ):
            found = [str(v) for v in rules.check_stack([tamper(r) for r in stack], team, teams)]
            assert sum(expect in v for v in found) >= (2 if tamper is without_properties_file else 3), (team, found)
