"""The platform's rules, as plain functions over resource properties.

The CrossGuard pack (infra/policy/__main__.py, `pulumi preview --policy-pack infra/policy`) and the
tests (`make test`, on the resources a team's program declares under Pulumi's mocks) run the same
functions, so a rule is proved without the CLI or a cloud.

Two kinds of rule:
- a resource rule: `rule(resource_type, props, urn, team, teams) -> list[Violation]`, where `props`
  are the resource's inputs as the engine sees them (camelCase wire names), `team` is the stack's
  team (a team stack is named after its team: `pulumi up -s fraud`) and `teams` the platform's team
  registry (every team's exact identities: namespace, service accounts, bucket, owners' group, and
  its network range), to recognise another team's resources by identity, never by a name prefix;
- a stack rule: `rule(resources, team, teams) -> list[Violation]` over every resource of a stack.

Every violation names its rule and the resource's URN. Values Pulumi cannot know during a preview
arrive as UNKNOWN and are never judged (the rules run again at `pulumi up`, on known values).
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import json
import re
import unicodedata
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Callable

import javaproperties

from .. import spark_auth, topic_quota


class _Unknown:
    """A value Pulumi cannot know during a preview (an output not yet computed)."""

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN = _Unknown()

NAMESPACE = "kubernetes:core/v1:Namespace"
RESOURCE_QUOTA = "kubernetes:core/v1:ResourceQuota"
NETWORK_POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
# Kubernetes kinds that live outside namespaces; every other object of a team lives in the team's
# (a generic CustomResource's scope is not known from its type, so it is not judged on it)
CLUSTER_SCOPED_KINDS = frozenset(
    {
        "Namespace",
        "Node",
        "PersistentVolume",
        "StorageClass",
        "PriorityClass",
        "RuntimeClass",
        "IngressClass",
        "ClusterRole",
        "ClusterRoleBinding",
        "ClusterRoleBindingPatch",
        "CustomResourceDefinition",
        "APIService",
        "ValidatingWebhookConfiguration",
        "MutatingWebhookConfiguration",
        "CSIDriver",
        "VolumeAttachment",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
        "CustomResource",
    }
)
TEAM_LABELS = ("team", "tier", "managed-by")  # on every labelable GCP resource
K8S_TEAM_LABELS = ("daggers.dev/team", "team")  # one of them on every Kubernetes object
PUBLIC_MEMBERS = ("allUsers", "allAuthenticatedUsers")
# Project-wide roles a team stack may grant: they reach no other team's data or workloads. Any other
# project-wide role (storage.objectAdmin, container.developer, ...) would reach every team's buckets
# or namespaces, so a team's access is granted on its own resources instead.
PROJECT_ROLES_ALLOWED = frozenset(
    {
        "roles/logging.logWriter",
        "roles/monitoring.metricWriter",
        "roles/monitoring.viewer",
        "roles/stackdriver.resourceMetadata.writer",
        "roles/artifactregistry.reader",
        "roles/container.defaultNodeServiceAccount",
        "roles/container.clusterViewer",
    }
)


# -- what a rule sees and says ----------------------------------------------------------------------


@dataclass(frozen=True)
class Violation:
    rule: str
    urn: str
    message: str

    def __str__(self) -> str:
        return f"{self.rule}: {self.urn}: {self.message}"


@dataclass(frozen=True)
class Resource:
    """One resource of a stack, as a stack rule sees it."""

    type: str
    urn: str
    props: Mapping[str, Any]

    @property
    def name(self) -> str:
        return logical_name(self.urn)


@dataclass(frozen=True)
class TeamIdentities:
    """The exact identities one team's stack creates (infra/spec.py derives them; the registry
    copies them from each spec): what another stack could name or grant, and the only members
    the team's own grants may go to."""

    name: str
    cidr: ipaddress.IPv4Network | None
    namespace: str  # also the service account id, network tag and subnetwork name
    service_account: str  # the email of the team's Google service account
    service_account_resource: str  # projects/<project>/serviceAccounts/<email>
    bucket: str  # the checkpoint bucket
    workload_pool: str  # <project>.svc.id.goog: the team's Kubernetes service accounts
    owners_group: str | None = None  # the owners' Google group (infra/grants/<team>.yaml)
    tier: str | None = field(default=None, compare=False)  # its caps on Kafka topics (topic_quota)

    @property
    def member(self) -> str:
        return f"serviceAccount:{self.service_account}"

    @property
    def names(self) -> frozenset[str]:
        """The names another stack must not mention, casefolded (see _tokens)."""
        names = {self.namespace, self.service_account, self.bucket, self.owners_group or ""}
        return frozenset(_fold(n) for n in names if n)

    def is_own_member(self, member: Any) -> bool:
        """member is this team's service account, or one of its Kubernetes service accounts through
        Workload Identity: spelled exactly as IAM writes them (an allow-list, so any other spelling,
        case or look-alike is refused rather than guessed at)."""
        if not isinstance(member, str):
            return False
        if member == self.member:
            return True
        m = _WI_MEMBER.fullmatch(member)
        return (
            bool(m)
            and m["pool"] == self.workload_pool
            and m["namespace"] == self.namespace
            and _DNS_SUBDOMAIN.fullmatch(m["ksa"]) is not None
        )

    def own_members(self) -> str:
        return f"{self.member} or serviceAccount:{self.workload_pool}[{self.namespace}/<its service account>]"


_WI_MEMBER = re.compile(
    r"^serviceAccount:(?P<pool>[a-z0-9.-]+\.svc\.id\.goog)\[(?P<namespace>[a-z0-9-]+)/(?P<ksa>[^\]]+)\]$"
)


def _fold(text: str) -> str:
    """One spelling for comparing names: compatibility forms folded (fullwidth letters and the
    like), case folded, surrounding blanks and trailing dots (FQDN style) dropped."""
    return unicodedata.normalize("NFKC", text).casefold().strip().rstrip(".")


# A name inside a longer string: bucket, email, namespace characters; `gs://b/x`, `a[b/c]`,
# `serviceAccount:e` and `projects/p/serviceAccounts/e` split into their names.
_TOKEN = re.compile(r"[a-z0-9._@-]+")


def _tokens(text: str) -> set[str]:
    """The names in a string, each also as its dot- and @-separated parts (a bucket in a host name
    `b.storage.googleapis.com`, an account id in an email)."""
    out = set()
    for token in _TOKEN.findall(_fold(text)):
        token = token.strip(".")
        out.add(token)
        out.update(token.split("@"))
        out.update(token.split("."))
    return out - {""}


@dataclass(frozen=True)
class Teams:
    """The platform's team registry: every team's exact identities and network range, from the
    team specs (and the owners' groups from the grants). Teams are told apart by these identities,
    never by a name prefix: `fraud` and `fraud-spark` are two teams whose names share nothing."""

    identities: Mapping[str, TeamIdentities] = field(default_factory=dict)
    project: str = ""

    @classmethod
    def of(cls, project: str, ranges: Mapping[str, Any], owners_groups: Mapping[str, str] | None = None) -> "Teams":
        """A registry from team names and ranges, with the identities the platform derives from a
        name (spec.TeamSpec's namespace, service_account_id and bucket_name)."""
        groups = owners_groups or {}
        out = {}
        for name, cidr in ranges.items():
            email = f"dagger-{name}@{project}.iam.gserviceaccount.com"
            out[name] = TeamIdentities(
                name=name,
                cidr=ipaddress.IPv4Network(cidr) if cidr is not None else None,
                namespace=f"dagger-{name}",
                service_account=email,
                service_account_resource=f"projects/{project}/serviceAccounts/{email}",
                bucket=f"{project}-{name}-checkpoints",
                workload_pool=f"{project}.svc.id.goog",
                owners_group=groups.get(name),
            )
        return cls(out, project)

    @classmethod
    def from_specs(cls, specs, project: str, owners_groups: Mapping[str, str] | None = None) -> "Teams":
        """The registry from the team specs: each identity as the spec names it."""
        groups = owners_groups or {}
        out = {}
        for s in specs:
            email = f"{s.service_account_id}@{project}.iam.gserviceaccount.com"
            out[s.name] = TeamIdentities(
                name=s.name,
                cidr=s.cidr,
                namespace=s.namespace,
                service_account=email,
                service_account_resource=f"projects/{project}/serviceAccounts/{email}",
                bucket=s.bucket_name(project),
                workload_pool=f"{project}.svc.id.goog",
                owners_group=groups.get(s.name),
                tier=s.tier,
            )
        return cls(out, project)

    @property
    def names(self) -> frozenset[str]:
        return frozenset(self.identities)

    @property
    def ranges(self) -> dict[str, ipaddress.IPv4Network]:
        return {name: t.cidr for name, t in self.identities.items() if t.cidr is not None}

    def get(self, team: str) -> TeamIdentities | None:
        return self.identities.get(team)

    def named_in(self, text: str) -> set[str]:
        """The teams whose exact identities (namespace, service account, bucket, owners' group)
        a string names."""
        tokens = _tokens(text)
        return {name for name, t in self.identities.items() if tokens & t.names}


# Team names a team may not take: the platform's own stack, and names that read as Kubernetes',
# GKE's, Istio's or Google's own (reviewers, audit logs and RBAC would confuse them).
PLATFORM_STACK = "platform"
RESERVED_TEAM_NAMES = frozenset(
    {
        PLATFORM_STACK,
        "default",
        "system",
        "admin",
        "root",
        "all",
        "shared",
        "public",
        "dagger",
        "daggers",
        "kube",
        "gke",
        "istio",
        "google",
        "goog",
        "anthos",
        "knative",
        "gatekeeper",
    }
)
RESERVED_TEAM_PREFIXES = (
    "kube-",
    "gke-",
    "istio-",
    "dagger-",
    "goog",
    "anthos-",
    "knative-",
    "gatekeeper-",
    "config-management-",
    "cnrm-",
    "system-",
    "platform-",
)


def reserved_name_problem(name: str) -> str | None:
    """Why `name` cannot be a team's, or None."""
    folded = _fold(name)
    if folded in RESERVED_TEAM_NAMES:
        return f"{name!r} is reserved (reserved names: {', '.join(sorted(RESERVED_TEAM_NAMES))})"
    prefix = next((p for p in RESERVED_TEAM_PREFIXES if folded.startswith(p)), None)
    if prefix:
        return f"{name!r} starts with the reserved prefix {prefix!r} (reserved: {', '.join(RESERVED_TEAM_PREFIXES)})"
    return None


def team_namespace(team: str) -> str:
    """The team's namespace (TeamSpec.namespace)."""
    return f"dagger-{team}"


def stack_of(urn: str) -> str:
    """The stack a URN belongs to: urn:pulumi:<stack>::<project>::<type>::<name>."""
    parts = urn.split("::")
    return parts[0].split(":")[-1] if urn.startswith("urn:pulumi:") else ""


def logical_name(urn: str) -> str:
    return urn.split("::")[-1] if "::" in urn else urn


def is_team_stack(team: str, teams: "Teams | None" = None) -> bool:
    """Every stack but the platform's own; a team registered as `platform` is a team (and refused)."""
    return bool(team) and (team != PLATFORM_STACK or (teams is not None and team in teams.names))


# -- small helpers over props -------------------------------------------------------------------------


def _get(props: Any, *path: str) -> Any:
    """props.a.b..., or None where a step is missing (UNKNOWN where a step is unknown)."""
    value = props
    for key in path:
        if value is UNKNOWN:
            return UNKNOWN
        if not isinstance(value, Mapping) or key not in value:
            return None
        value = value[key]
    return value


def _items(value: Any) -> list:
    """A list property as a list (absent or unknown: empty)."""
    if value is None or value is UNKNOWN or isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        return []
    return list(value)


def _strings(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """Every string inside a property tree, with where it is (`spec.subjects[0].namespace`)."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, Mapping):
        for key in value:
            yield from _strings(value[key], f"{path}.{key}" if path else str(key))
    elif isinstance(value, Sequence) and not isinstance(value, bytes):
        for i, item in enumerate(value):
            yield from _strings(item, f"{path}[{i}]")


def _kind(resource_type: str) -> str:
    return resource_type.rsplit(":", 1)[-1]


def is_iam(resource_type: str) -> bool:
    """A GCP IAM member, binding or policy on anything (project, bucket, service account, ...);
    pulumi-gcp spells it IAMMember on some resources and IamMember on others (SecretIamMember)."""
    return (
        resource_type.startswith("gcp:")
        and re.search(r"iam(member|binding|policy)$", _kind(resource_type), re.IGNORECASE) is not None
    )


def is_acl(resource_type: str) -> bool:
    return (
        resource_type.startswith("gcp:storage/")
        and re.search(r"(ACL|AccessControl)$", _kind(resource_type)) is not None
    )


_K8S_OBJECT = re.compile(r"^kubernetes:(?P<group>[a-z0-9.-]+)/(?P<version>v[0-9a-z]+):(?P<kind>[A-Z][A-Za-z]*)$")


def is_k8s_object(resource_type: str) -> bool:
    """A Kubernetes API object (has metadata): not the provider, a Helm release or a YAML bundle."""
    if resource_type == "kubernetes:apiextensions.k8s.io:CustomResource":
        return True
    m = _K8S_OBJECT.match(resource_type)
    return bool(m) and m["group"] != "helm.sh" and not m["kind"].endswith("List")


def _members(props: Mapping) -> list[tuple[str, str]]:
    """(where, member) for an IAM resource's member, members and a policy's bindings."""
    out = []
    member = _get(props, "member")
    if isinstance(member, str):
        out.append(("member", member))
    for i, m in enumerate(_items(_get(props, "members"))):
        if isinstance(m, str):
            out.append((f"members[{i}]", m))
    policy = _get(props, "policyData")
    if isinstance(policy, str):
        for who in PUBLIC_MEMBERS:
            if who in policy:
                out.append(("policyData", who))
    return out


# -- resource rules -------------------------------------------------------------------------------

NO_PUBLIC_BUCKETS = "no-public-buckets"


def no_public_buckets(
    resource_type: str, props: Mapping, urn: str, team: str = "", teams: Teams | None = None
) -> list[Violation]:
    """Buckets enforce public access prevention and uniform bucket-level access; no IAM member or
    ACL anywhere grants allUsers or allAuthenticatedUsers."""
    out = []
    if resource_type == "gcp:storage/bucket:Bucket":
        pap = _get(props, "publicAccessPrevention")
        if pap is not UNKNOWN and pap != "enforced":
            out.append(Violation(NO_PUBLIC_BUCKETS, urn, f"publicAccessPrevention is {pap!r}; it must be 'enforced'"))
        ubla = _get(props, "uniformBucketLevelAccess")
        if ubla is not UNKNOWN and ubla is not True:
            out.append(
                Violation(
                    NO_PUBLIC_BUCKETS,
                    urn,
                    f"uniformBucketLevelAccess is {ubla!r}; it must be true (no per-object ACLs)",
                )
            )
    if is_iam(resource_type):
        for where, member in _members(props):
            if member in PUBLIC_MEMBERS:
                out.append(Violation(NO_PUBLIC_BUCKETS, urn, f"{where} grants {member}: nothing is public"))
    if is_acl(resource_type):
        for where, value in _strings(props):
            if any(p.lower() in value.lower() for p in PUBLIC_MEMBERS):
                out.append(Violation(NO_PUBLIC_BUCKETS, urn, f"{where} grants {value}: nothing is public"))
    return out


TEAM_ISOLATION = "team-isolation"


def team_isolation(
    resource_type: str, props: Mapping, urn: str, team: str, teams: Teams | None = None
) -> list[Violation]:
    """A team's stack grants nothing on another team's resources and gives another team nothing:
    no property of its resources (IAM members and targets, RoleBinding subjects, namespaces, ...)
    names another team's identity, namespace or bucket; every namespaced Kubernetes object lives in
    the team's namespace; no firewall rule or NetworkPolicy ipBlock admits another team's range; no
    project-wide role that would reach every team."""
    if not is_team_stack(team, teams) or not (resource_type.startswith(("gcp:", "kubernetes:"))):
        return []
    teams = teams or Teams()
    out = []
    for where, value in _strings(props):
        for other in sorted(teams.named_in(value) - {team}):
            out.append(
                Violation(
                    TEAM_ISOLATION,
                    urn,
                    f"{where} = {value!r} names team {other}'s resources; the {team} stack "
                    f"may only reference the {team} team's",
                )
            )
    if resource_type == "gcp:compute/firewall:Firewall" and _items(_get(props, "allows")):
        for key in ("sourceRanges", "destinationRanges"):
            for i, cidr in enumerate(_items(_get(props, key))):
                out += [
                    Violation(TEAM_ISOLATION, urn, f"{key}[{i}] = {cidr} admits team {other}'s range {their}")
                    for other, their in _ranges_admitted(cidr, None, team, teams)
                ]
    if is_k8s_object(resource_type) and _kind(resource_type) not in CLUSTER_SCOPED_KINDS:
        ns = _get(props, "metadata", "namespace")
        home = team_namespace(team)
        if ns is not UNKNOWN and ns != home and not (isinstance(ns, str) and teams.named_in(ns) - {team}):
            where = f"metadata.namespace is {ns!r}" if ns else "metadata.namespace is not set (the provider's default)"
            out.append(Violation(TEAM_ISOLATION, urn, f"{where}; the {team} stack's objects live in {home}"))
    if resource_type == NETWORK_POLICY:
        for where, block in _ip_blocks(props):
            out += [
                Violation(TEAM_ISOLATION, urn, f"{where} = {block['cidr']} admits team {other}'s range {their}")
                for other, their in _ranges_admitted(block.get("cidr"), block.get("except"), team, teams)
            ]
    if re.match(r"^gcp:(projects|organizations|folders)/", resource_type) and is_iam(resource_type):
        role = _get(props, "role")
        if _kind(resource_type) == "IAMPolicy":
            out.append(Violation(TEAM_ISOLATION, urn, "a team stack must not replace the project's IAM policy"))
        elif isinstance(role, str) and role not in PROJECT_ROLES_ALLOWED:
            out.append(
                Violation(
                    TEAM_ISOLATION,
                    urn,
                    f"grants {role} on the whole project, which reaches every team's "
                    f"resources; grant it on the team's own resources instead",
                )
            )
    return out


OWN_MEMBERS = "grants-to-own-identities"
# The grants a team stack makes: IAMMember (additive) on its own bucket, its own service account and
# the project (PROJECT_ROLES_ALLOWED). Bindings and policies are authoritative: they would remove
# whatever else holds the role, so a team stack makes none.
TEAM_IAM_TYPES = frozenset(
    {
        "gcp:storage/bucketIAMMember:BucketIAMMember",
        "gcp:serviceaccount/iAMMember:IAMMember",
        "gcp:projects/iAMMember:IAMMember",
    }
)
# Every member prefix IAM accepts (and allUsers, allAuthenticatedUsers): how a string that grants is
# recognised wherever it sits, in whatever case or with blanks around it.
_MEMBER_SHAPE = re.compile(
    r"^\s*(allusers|allauthenticatedusers|(user|group|domain|serviceaccount|principal|"
    r"principalset|deleted|projectowner|projecteditor|projectviewer)\s*:)",
    re.IGNORECASE,
)
_MEMBER_KEYS = ("member", "members", "iamMember")
# BigQuery dataset access names its grantees in fields of their own.
_EMAIL_GRANT_KEYS = ("userByEmail", "groupByEmail", "domain", "specialGroup")
RBAC_BINDINGS = re.compile(r"^kubernetes:rbac\.authorization\.k8s\.io/v[^:]*:RoleBinding(Patch)?$")


def _grantees(resource_type: str, props: Mapping) -> Iterator[tuple[str, Any]]:
    """(where, member) for every grantee in a GCP resource's inputs: member fields wherever they
    sit, an IAM policy's bindings, and any other string shaped like an IAM member."""
    keys = _MEMBER_KEYS + (_EMAIL_GRANT_KEYS if resource_type.startswith("gcp:bigquery/") else ())
    seen = set()
    for where, value in _strings(props):
        last = re.sub(r"\[\d+\]$", "", where).rsplit(".", 1)[-1]
        if last in keys or _MEMBER_SHAPE.match(unicodedata.normalize("NFKC", value)):
            seen.add(where)
            yield where, value
    for key in _MEMBER_KEYS:  # a member the preview does not know yet is judged at `pulumi up`
        if _get(props, key) is UNKNOWN and key not in seen:
            yield key, UNKNOWN
    policy = _get(props, "policyData")
    if isinstance(policy, str):
        try:
            bindings = json.loads(policy).get("bindings", [])
        except (ValueError, AttributeError):
            yield "policyData", policy
            return
        for i, binding in enumerate(_items(bindings)):
            for j, member in enumerate(_items(_get(binding, "members"))):
                yield f"policyData.bindings[{i}].members[{j}]", member


def grants_to_own_identities(
    resource_type: str, props: Mapping, urn: str, team: str, teams: Teams | None = None
) -> list[Violation]:
    """A team stack grants to its own identities only, and only on its own resources: every IAM
    member is the team's service account or one of its Kubernetes service accounts (Workload
    Identity), never a user, group, domain, principal, another team's or any other account, nor
    anyone at all; IAM grants are IAMMembers on the team's bucket, its account or the platform's
    project; no ACLs; a RoleBinding names the team's service accounts or its owners' group only."""
    if not is_team_stack(team, teams):
        return []
    teams = teams or Teams()
    me = teams.get(team)
    own = me.own_members() if me else f"nobody: {team} is not in the platform's team registry"
    out = []
    if resource_type.startswith("gcp:"):
        for where, member in _grantees(resource_type, props):
            if member is UNKNOWN or (me and me.is_own_member(member)):
                continue
            out.append(
                Violation(
                    OWN_MEMBERS,
                    urn,
                    f"{where} = {member!r} is not one of team {team}'s identities; "
                    f"the {team} stack grants only to {own}",
                )
            )
        if is_acl(resource_type):
            out.append(
                Violation(
                    OWN_MEMBERS,
                    urn,
                    "ACLs grant outside IAM; the team's bucket uses uniform "
                    "bucket-level access, grant with a BucketIAMMember",
                )
            )
        if is_iam(resource_type):
            out += _iam_target_violations(resource_type, props, urn, team, teams, me)
    elif RBAC_BINDINGS.match(resource_type):
        for i, subject in enumerate(_items(_get(props, "subjects"))):
            kind, name, ns = (_get(subject, k) for k in ("kind", "name", "namespace"))
            if UNKNOWN in (kind, name, ns):
                continue
            if (
                me
                and kind == "ServiceAccount"
                and ns == me.namespace
                and isinstance(name, str)
                and _DNS_SUBDOMAIN.fullmatch(name)
            ):
                continue
            if me and kind == "Group" and me.owners_group is not None and name == me.owners_group:
                continue
            group = me.owners_group if me and me.owners_group else "none granted"
            out.append(
                Violation(
                    OWN_MEMBERS,
                    urn,
                    f"subjects[{i}] = {kind} {name!r} is not one of team {team}'s identities; a "
                    f"RoleBinding names the team's service accounts (namespace "
                    f"{me.namespace if me else team_namespace(team)}) or its owners' group ({group})",
                )
            )
    return out


def _iam_target_violations(
    resource_type: str, props: Mapping, urn: str, team: str, teams: Teams, me: TeamIdentities | None
) -> list[Violation]:
    if resource_type not in TEAM_IAM_TYPES:
        return [
            Violation(
                OWN_MEMBERS,
                urn,
                f"{_kind(resource_type)} is not a grant a team stack makes: it "
                "grants with an IAMMember on its own bucket, its own service "
                "account or the project",
            )
        ]
    out = []
    checks = {
        "gcp:storage/bucketIAMMember:BucketIAMMember": ("bucket", {me.bucket} if me else set(), "bucket"),
        "gcp:serviceaccount/iAMMember:IAMMember": (
            "serviceAccountId",
            {me.service_account_resource, me.service_account} if me else set(),
            "service account",
        ),
        "gcp:projects/iAMMember:IAMMember": ("project", {teams.project} if teams.project else set(), "project"),
    }
    key, allowed, what = checks[resource_type]
    target = _get(props, key)
    if target is not UNKNOWN and target not in allowed:
        mine = " or ".join(sorted(allowed)) or "none known"
        out.append(Violation(OWN_MEMBERS, urn, f"{key} = {target!r} is not the {team} team's own {what} ({mine})"))
    return out


REGISTERED_TEAM = "registered-team"


def registered_team(resources: Sequence[Resource], team: str = "", teams: Teams | None = None) -> list[Violation]:
    """A team stack is a team of the platform's registry (infra/teams, infra/grants), and its name
    is not reserved: `platform` is the platform's own stack, and kube-*, gke-*, istio-*, default
    and the like read as the cluster's own."""
    if not resources or not is_team_stack(team, teams):
        return []
    teams = teams or Teams()
    urn = resources[0].urn
    why = reserved_name_problem(team)
    if why:
        return [Violation(REGISTERED_TEAM, urn, f"stack {team}: the team name {why}")]
    if team not in teams.names:
        return [
            Violation(
                REGISTERED_TEAM,
                urn,
                f"stack {team} is not a team of the platform's registry "
                f"(infra/teams/{team}.yaml): its identities are unknown, so "
                "nothing it grants can be checked",
            )
        ]
    return []


def _network(cidr: Any) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    try:
        return ipaddress.ip_network(cidr, strict=False) if isinstance(cidr, str) else None
    except ValueError:
        return None


def _ranges_admitted(cidr: Any, excepted: Any, team: str, teams: Teams) -> list[tuple[str, ipaddress.IPv4Network]]:
    """The other teams' ranges that `cidr` (less the `excepted` ranges) reaches."""
    net = _network(cidr)
    if net is None or net.version != 4:
        return []
    holes = [n for n in map(_network, _items(excepted)) if n is not None and n.version == 4]
    return [
        (other, their)
        for other, their in sorted(teams.ranges.items())
        if other != team and net.overlaps(their) and not any(their.subnet_of(h) for h in holes)
    ]


def _ip_blocks(props: Mapping) -> Iterator[tuple[str, Mapping]]:
    """A NetworkPolicy's ipBlock peers, ingress and egress, with where they are."""
    for direction, peers in (("ingress", "from"), ("egress", "to")):
        for i, rule in enumerate(_items(_get(props, "spec", direction))):
            for j, peer in enumerate(_items(_get(rule, peers))):
                block = _get(peer, "ipBlock")
                if isinstance(block, Mapping):
                    yield f"spec.{direction}[{i}].{peers}[{j}].ipBlock.cidr", block


LABELS_PRESENT = "labels-present"

# Where each labelable GCP resource keeps its labels (the GCP labels, not Kubernetes node labels).
GCP_LABELS = {
    "gcp:storage/bucket:Bucket": ("labels",),
    "gcp:compute/instance:Instance": ("labels",),
    "gcp:compute/instanceTemplate:InstanceTemplate": ("labels",),
    "gcp:compute/disk:Disk": ("labels",),
    "gcp:compute/address:Address": ("labels",),
    "gcp:compute/image:Image": ("labels",),
    "gcp:compute/snapshot:Snapshot": ("labels",),
    "gcp:container/cluster:Cluster": ("resourceLabels",),
    "gcp:container/nodePool:NodePool": ("nodeConfig", "resourceLabels"),
    "gcp:dataproc/cluster:Cluster": ("labels",),
    "gcp:pubsub/topic:Topic": ("labels",),
    "gcp:pubsub/subscription:Subscription": ("labels",),
    "gcp:secretmanager/secret:Secret": ("labels",),
    "gcp:redis/instance:Instance": ("labels",),
    "gcp:artifactregistry/repository:Repository": ("labels",),
    "gcp:dns/managedZone:ManagedZone": ("labels",),
}
_GCP_LABEL_KEY = re.compile(r"^[a-z][a-z0-9_-]{0,62}$")
_GCP_LABEL_VALUE = re.compile(r"^[a-z0-9_-]{0,63}$")


def labels_present(
    resource_type: str, props: Mapping, urn: str, team: str = "", teams: Teams | None = None
) -> list[Violation]:
    """Every labelable GCP resource carries team, tier and managed-by (GCP's label rules: lowercase,
    at most 63 characters); every Kubernetes object a daggers.dev/team or team label. In a team
    stack the team label is the stack's team (costs go to the right team)."""
    out = []
    if resource_type in GCP_LABELS:
        path = GCP_LABELS[resource_type]
        labels = _get(props, *path)
        if labels is UNKNOWN:
            return []
        labels = labels if isinstance(labels, Mapping) else {}
        where = ".".join(path)
        missing = [k for k in TEAM_LABELS if not labels.get(k)]
        if missing:
            out.append(
                Violation(
                    LABELS_PRESENT,
                    urn,
                    f"{where} lacks {', '.join(missing)} (every GCP resource carries {', '.join(TEAM_LABELS)})",
                )
            )
        for key in labels:
            value = labels[key]
            if value is UNKNOWN:
                continue
            if not _GCP_LABEL_KEY.match(str(key)) or not isinstance(value, str) or not _GCP_LABEL_VALUE.match(value):
                out.append(
                    Violation(
                        LABELS_PRESENT,
                        urn,
                        f"{where}.{key} = {value!r} breaks GCP's label rules "
                        "(lowercase letters, digits, '_' and '-', at most 63)",
                    )
                )
        owner = labels.get("team")
        if is_team_stack(team, teams) and isinstance(owner, str) and owner and owner != team:
            out.append(Violation(LABELS_PRESENT, urn, f"{where}.team is {owner!r} in the {team} stack"))
    elif is_k8s_object(resource_type):
        labels = _get(props, "metadata", "labels")
        if labels is UNKNOWN:
            return []
        labels = labels if isinstance(labels, Mapping) else {}
        present = [k for k in K8S_TEAM_LABELS if labels.get(k)]
        if not present:
            out.append(
                Violation(LABELS_PRESENT, urn, f"metadata.labels lacks a team label ({' or '.join(K8S_TEAM_LABELS)})")
            )
        for key in present:
            if is_team_stack(team, teams) and labels[key] is not UNKNOWN and labels[key] != team:
                out.append(
                    Violation(LABELS_PRESENT, urn, f"metadata.labels.{key} is {labels[key]!r} in the {team} stack")
                )
    return out


NAME_LIMITS = "gcp-name-limits"

_BUCKET_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]{1,61}[a-z0-9]$")
_SA_ID = re.compile(r"^[a-z][a-z0-9-]{4,28}[a-z0-9]$")
_RFC1035 = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
AUTONAME_SUFFIX = 8  # Pulumi appends '-' and 7 random characters to an auto-named resource
# Compute Engine resources whose name is an RFC 1035 label of at most 63 characters
RFC1035_NAMED = {
    "gcp:compute/instance:Instance",
    "gcp:compute/subnetwork:Subnetwork",
    "gcp:compute/firewall:Firewall",
    "gcp:compute/network:Network",
    "gcp:compute/address:Address",
    "gcp:compute/disk:Disk",
    "gcp:compute/router:Router",
    "gcp:compute/routerNat:RouterNat",
    "gcp:compute/instanceTemplate:InstanceTemplate",
}
NODE_POOL_MAX = 40


def _effective_name(props: Mapping, key: str, urn: str) -> tuple[Any, str]:
    """The name a resource gets: its `name` input, or Pulumi's auto-name from its logical name."""
    name = _get(props, key)
    if name is None:
        return f"{logical_name(urn)}-xxxxxxx", f"auto-name from {logical_name(urn)!r}"
    return name, f"{key} {name!r}"


def gcp_name_limits(
    resource_type: str, props: Mapping, urn: str, team: str = "", teams: Teams | None = None
) -> list[Violation]:
    """Names GCP and Kubernetes accept: buckets 3-63 of [a-z0-9-_.] starting and ending with a letter
    or digit, never 'goog'-prefixed; service account ids 6-30; Compute Engine names RFC 1035 labels of
    at most 63; GKE node pools at most 40; namespaces DNS labels, other objects DNS subdomains."""

    def bad(what: str, rule: str) -> Violation:
        return Violation(NAME_LIMITS, urn, f"{what} {rule}")

    out = []
    if resource_type == "gcp:storage/bucket:Bucket":
        name, what = _effective_name(props, "name", urn)
        if isinstance(name, str) and (not _BUCKET_NAME.match(name) or name.startswith("goog") or "google" in name):
            out.append(
                bad(
                    what,
                    f"({len(name)} characters) is not a bucket name: 3 to 63 lowercase letters, "
                    "digits, '-', '_' and '.', starting and ending with a letter or digit, "
                    "without 'goog' or 'google'",
                )
            )
    elif resource_type == "gcp:serviceaccount/account:Account":
        name = _get(props, "accountId")
        if isinstance(name, str) and not _SA_ID.match(name):
            out.append(
                bad(
                    f"accountId {name!r}",
                    f"({len(name)} characters) is not a service account id: "
                    "6 to 30 lowercase letters, digits and '-', starting with a letter",
                )
            )
    elif resource_type in RFC1035_NAMED:
        name, what = _effective_name(props, "name", urn)
        if isinstance(name, str) and not _RFC1035.match(name):
            out.append(
                bad(
                    what,
                    f"({len(name)} characters) is not an RFC 1035 name: a lowercase letter, then up "
                    "to 62 lowercase letters, digits or '-', not ending in '-'",
                )
            )
    elif resource_type == "gcp:container/nodePool:NodePool":
        name, what = _effective_name(props, "name", urn)
        if isinstance(name, str) and (not _RFC1035.match(name) or len(name) > NODE_POOL_MAX):
            out.append(
                bad(
                    what,
                    f"({len(name)} characters) is not a node pool name: an RFC 1035 name of at "
                    f"most {NODE_POOL_MAX} characters",
                )
            )
    elif is_k8s_object(resource_type):
        name = _get(props, "metadata", "name")
        if isinstance(name, str):
            if _kind(resource_type) == "Namespace" and not _DNS_LABEL.match(name):
                out.append(
                    bad(
                        f"metadata.name {name!r}",
                        "is not a namespace name: a DNS label of at most 63 lowercase letters, digits and '-'",
                    )
                )
            elif not _DNS_SUBDOMAIN.match(name):
                out.append(
                    bad(
                        f"metadata.name {name!r}",
                        "is not a Kubernetes name: a DNS subdomain of at "
                        "most 253 lowercase letters, digits, '-' and '.'",
                    )
                )
    return out


NO_EXTERNAL_IPS = "no-external-ips"


def no_external_ips(
    resource_type: str, props: Mapping, urn: str, team: str = "", teams: Teams | None = None
) -> list[Violation]:
    """Instances (and their templates) have no access configs: no external IPv4 or IPv6 address.
    They reach Kafka and GCS over the private network."""
    if resource_type not in ("gcp:compute/instance:Instance", "gcp:compute/instanceTemplate:InstanceTemplate"):
        return []
    out = []
    for i, nic in enumerate(_items(_get(props, "networkInterfaces"))):
        for key in ("accessConfigs", "ipv6AccessConfigs"):
            if _items(_get(nic, key)):
                out.append(
                    Violation(
                        NO_EXTERNAL_IPS,
                        urn,
                        f"networkInterfaces[{i}].{key} gives the instance an external address; remove it",
                    )
                )
    return out


NO_CLUSTER_ROLE_BINDINGS = "no-cluster-role-bindings"


def no_cluster_role_bindings(
    resource_type: str, props: Mapping, urn: str, team: str = "", teams: Teams | None = None
) -> list[Violation]:
    """RBAC is namespaced: a ClusterRoleBinding grants across every team's namespace."""
    if re.match(r"^kubernetes:rbac\.authorization\.k8s\.io/v[^:]*:ClusterRoleBinding(Patch)?$", resource_type):
        return [
            Violation(
                NO_CLUSTER_ROLE_BINDINGS,
                urn,
                "a ClusterRoleBinding grants in every namespace; bind a Role or ClusterRole with a "
                "RoleBinding in the team's namespace",
            )
        ]
    return []


SPARK_AUTHENTICATED = "spark-authenticated"
SPARK_CONF_DECLARED = "spark-conf-declared"
# what starts a standalone master or worker (spark-class with the daemon's class, or the sbin scripts)
SPARK_DAEMONS = {
    "org.apache.spark.deploy.master.Master": "master",
    "org.apache.spark.deploy.worker.Worker": "worker",
    "start-master.sh": "master",
    "start-worker.sh": "worker",
    "start-slave.sh": "worker",
}
WORKLOAD_KINDS = frozenset({"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob", "Pod"})
SECRET = "kubernetes:core/v1:Secret"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"


def _pod_spec(resource_type: str, props: Mapping) -> Any:
    kind = _kind(resource_type)
    if kind == "Pod":
        return _get(props, "spec")
    if kind == "CronJob":
        return _get(props, "spec", "jobTemplate", "spec", "template", "spec")
    return _get(props, "spec", "template", "spec")


def spark_containers(resource_type: str, props: Mapping) -> list[tuple[int, Mapping, list[str], str]]:
    """(index, container, argv, master|worker) for each container of a workload that runs a Spark
    standalone daemon; argv is its command and args (a shell's `-c` text counts by its words)."""
    if not (resource_type.startswith("kubernetes:") and _kind(resource_type) in WORKLOAD_KINDS):
        return []
    out = []
    for i, c in enumerate(_items(_get(_pod_spec(resource_type, props), "containers"))):
        argv = [a for a in _items(_get(c, "command")) + _items(_get(c, "args")) if isinstance(a, str)]
        words = [w for a in argv for w in a.split()]
        role = next(
            (r for w in words for name, r in SPARK_DAEMONS.items() if w == name or w.endswith("/" + name)), None
        )
        if role:
            out.append((i, c, words, role))
    return out


def _properties_file(words: Sequence[str]) -> str | None:
    """The path after --properties-file (or in --properties-file=path), the last one (Spark takes the last)."""
    found = None
    for i, w in enumerate(words):
        if w == "--properties-file" and i + 1 < len(words):
            found = words[i + 1]
        elif w.startswith("--properties-file="):
            found = w.split("=", 1)[1]
    return found


def _conf_mount(pod: Any, container: Mapping, path: str) -> tuple[Mapping | None, Mapping | None]:
    """The volume mount under which `path` sits in the container, and the pod's volume it mounts."""
    mounts = [
        m
        for m in _items(_get(container, "volumeMounts"))
        if isinstance(_get(m, "mountPath"), str)
        and (path == m["mountPath"] or path.startswith(m["mountPath"].rstrip("/") + "/"))
    ]
    if not mounts:
        return None, None
    mount = max(mounts, key=lambda m: len(m["mountPath"]))  # the deepest mount wins, as in the kernel
    volume = next((v for v in _items(_get(pod, "volumes")) if _get(v, "name") == _get(mount, "name")), None)
    return mount, volume


def spark_conf_texts(resource_type: str, props: Mapping) -> list[tuple[str, Any]]:
    """(where, text) for each spark-defaults.conf a Secret or ConfigMap holds (Secret `data` decoded
    from base64); text is UNKNOWN while the preview cannot know it, None when it does not decode."""
    if resource_type not in (SECRET, CONFIG_MAP):
        return []
    out = []
    for field_name in ("stringData", "data"):
        values = _get(props, field_name)
        if not isinstance(values, Mapping):
            continue
        for key, text in values.items():
            if not str(key).endswith(spark_auth.CONF_FILE):
                continue
            if resource_type == SECRET and field_name == "data" and isinstance(text, str):
                try:
                    text = base64.b64decode(text, validate=True).decode("utf-8")
                except (binascii.Error, UnicodeDecodeError):
                    text = None
            out.append((f"{field_name}.{key}", text))
    return out


def spark_conf_problems(text: Any) -> list[str]:
    """What a spark-defaults.conf lacks (spark_auth.auth_problems), read as Spark reads it
    (java.util.Properties rules); never quotes the file, which holds secrets."""
    if text is UNKNOWN:
        return []
    try:
        settings = javaproperties.loads(text) if isinstance(text, str) else None
    except (ValueError, UnicodeError):
        settings = None
    if settings is None:
        return ["is not a Java properties file"]
    return spark_auth.auth_problems(settings)


def spark_authenticated(
    resource_type: str, props: Mapping, urn: str, team: str = "", teams: Teams | None = None
) -> list[Violation]:
    """Spark standalone runs authenticated, encrypted and with its UIs filtered: every
    spark-defaults.conf has spark.authenticate with a secret, encrypted RPC without SASL fallback,
    the REST server and kill buttons off and the JWSFilter with a key, and sits in a Secret (never
    a ConfigMap); every master and worker container reads its settings with --properties-file from
    a read-only Secret volume and runs as a non-root user."""
    out = []
    for where, text in spark_conf_texts(resource_type, props):
        if resource_type == CONFIG_MAP:
            out.append(
                Violation(
                    SPARK_AUTHENTICATED,
                    urn,
                    f"data.{where.split('.', 1)[1]}: a Spark config holds "
                    "the cluster's secrets; it belongs in a Secret",
                )
            )
        out += [Violation(SPARK_AUTHENTICATED, urn, f"{where}: {p}") for p in spark_conf_problems(text)]
    pod = _pod_spec(resource_type, props) if resource_type.startswith("kubernetes:") else None
    for i, container, words, role in spark_containers(resource_type, props):
        at = f"containers[{i}] (Spark {role})"
        if UNKNOWN in words:
            continue
        path = _properties_file(words)
        if path is None:
            out.append(
                Violation(
                    SPARK_AUTHENTICATED,
                    urn,
                    f"{at} has no --properties-file: it would run without authentication, encryption and the UI filter",
                )
            )
        else:
            mount, volume = _conf_mount(pod, container, path)
            if mount is None or _get(mount, "readOnly") is not True or not isinstance(_get(volume, "secret"), Mapping):
                out.append(
                    Violation(
                        SPARK_AUTHENTICATED,
                        urn,
                        f"{at}: --properties-file {path} is not on a read-only mount of a Secret volume",
                    )
                )
        non_root = _get(container, "securityContext", "runAsNonRoot")
        non_root = _get(pod, "securityContext", "runAsNonRoot") if non_root is None else non_root
        uid = _get(container, "securityContext", "runAsUser")
        uid = _get(pod, "securityContext", "runAsUser") if uid is None else uid
        if UNKNOWN not in (non_root, uid) and (non_root is not True or uid == 0):
            out.append(
                Violation(
                    SPARK_AUTHENTICATED,
                    urn,
                    f"{at} may run as root: set runAsNonRoot and a "
                    "non-zero runAsUser (the drivers it launches run as it)",
                )
            )
    return out


def spark_conf_in_stack(resources: Sequence[Resource], team: str = "", teams: Teams | None = None) -> list[Violation]:
    """Each Spark master's and worker's --properties-file is a Secret of the same stack and
    namespace whose spark-defaults.conf passes spark_conf_problems: a conf the stack does not
    declare cannot be checked, so it is refused."""
    confs: dict[tuple[Any, Any], dict[str, Any]] = {}
    for r in resources:
        if r.type == SECRET:
            key = (_get(r.props, "metadata", "namespace"), _get(r.props, "metadata", "name"))
            confs[key] = {where.split(".", 1)[1]: text for where, text in spark_conf_texts(r.type, r.props)}
    out = []
    for r in resources:
        pod = _pod_spec(r.type, r.props) if r.type.startswith("kubernetes:") else None
        for i, container, words, role in spark_containers(r.type, r.props):
            path = _properties_file(words) if UNKNOWN not in words else None
            mount, volume = _conf_mount(pod, container, path) if path else (None, None)
            secret = _get(volume, "secret") if volume else None
            if not isinstance(secret, Mapping) or UNKNOWN in (secret.get("secretName"), path):
                continue  # refused by spark_authenticated, or not known yet
            relative = path[len(mount["mountPath"].rstrip("/")) + 1 :]
            items = {_get(it, "path"): _get(it, "key") for it in _items(secret.get("items"))}
            key = items.get(relative, relative) if items else relative
            ns = _get(r.props, "metadata", "namespace")
            found = confs.get((ns, secret["secretName"]))
            at = f"containers[{i}] (Spark {role})"
            if found is None or key not in found:
                out.append(
                    Violation(
                        SPARK_CONF_DECLARED,
                        r.urn,
                        f"{at}: --properties-file {path} is key {key!r} of "
                        f"Secret {secret['secretName']!r}, which this stack "
                        "does not declare with a spark-defaults.conf",
                    )
                )
                continue
            out += [
                Violation(SPARK_CONF_DECLARED, r.urn, f"{at}: its Secret {secret['secretName']!r}, {key}: {p}")
                for p in spark_conf_problems(found[key])
            ]
    return out


# -- stack rules ----------------------------------------------------------------------------------

NAMESPACE_GUARDS = "namespace-quota-and-default-deny"


def is_default_deny(props: Mapping) -> bool:
    """A NetworkPolicy that selects every pod and admits no ingress (and, if it lists Egress, no egress)."""
    selector = _get(props, "spec", "podSelector")
    if selector is None or selector is UNKNOWN or not isinstance(selector, Mapping):
        return False
    if _get(selector, "matchLabels") or _items(_get(selector, "matchExpressions")):
        return False
    types = [t for t in _items(_get(props, "spec", "policyTypes")) if isinstance(t, str)]
    if "Ingress" not in types or _items(_get(props, "spec", "ingress")):
        return False
    return "Egress" not in types or not _items(_get(props, "spec", "egress"))


def namespace_guards(resources: Sequence[Resource], team: str = "", teams: Teams | None = None) -> list[Violation]:
    """Every Namespace has a ResourceQuota (with hard limits) and a default-deny NetworkPolicy."""
    quotas: dict[str, list[Resource]] = {}
    deny: set[str] = set()
    for r in resources:
        ns = _get(r.props, "metadata", "namespace")
        if not isinstance(ns, str):
            continue
        if (
            r.type == RESOURCE_QUOTA
            and isinstance(_get(r.props, "spec", "hard"), Mapping)
            and _get(r.props, "spec", "hard")
        ):
            quotas.setdefault(ns, []).append(r)
        elif r.type == NETWORK_POLICY and is_default_deny(r.props):
            deny.add(ns)
    out = []
    for r in resources:
        if r.type != NAMESPACE:
            continue
        name = _get(r.props, "metadata", "name")
        if name is UNKNOWN:
            continue
        if not isinstance(name, str):
            out.append(
                Violation(
                    NAMESPACE_GUARDS,
                    r.urn,
                    "the namespace has no explicit metadata.name, so its quota and network policy cannot be checked",
                )
            )
            continue
        if name not in quotas:
            out.append(Violation(NAMESPACE_GUARDS, r.urn, f"namespace {name} has no ResourceQuota with hard limits"))
        if name not in deny:
            out.append(
                Violation(
                    NAMESPACE_GUARDS,
                    r.urn,
                    f"namespace {name} has no default-deny NetworkPolicy "
                    "(podSelector {}, policyTypes Ingress, no ingress rules)",
                )
            )
    return out


KAFKA_TOPIC_QUOTA = "kafka-topic-quota"
KAFKA_TOPIC = "kafka:index/topic:Topic"  # the pulumi-kafka provider's topic


def _declared_topic(props: Mapping) -> topic_quota.OwnTopic | None:
    """A declared Kafka topic as the quota sees it; None while a value is unknown. An infinite
    retention (-1) or one that is not a number counts as above every cap."""
    name, partitions, config = _get(props, "name"), _get(props, "partitions"), _get(props, "config")
    config = config if isinstance(config, Mapping) else {}
    if UNKNOWN in (name, partitions) or UNKNOWN in config.values():
        return None

    def ceil_of(key: str, unit: int) -> int | None:
        if key not in config:
            return None
        try:
            value = int(str(config[key]))
        except ValueError:
            return 10**9
        return 10**9 if value < 0 else -(-value // unit)

    count = partitions if isinstance(partitions, int) and not isinstance(partitions, bool) else 10**9
    return topic_quota.OwnTopic(
        "",
        name if isinstance(name, str) else repr(name),
        count,
        ceil_of("retention.ms", 3600 * 1000),
        ceil_of("retention.bytes", 1024**3),
    )


def _team_tier(team: str, teams: Teams | None) -> str | None:
    identities = teams.get(team) if teams is not None else None
    return identities.tier if identities is not None else None  # unknown: the smallest caps


def kafka_topic_quota(
    resource_type: str, props: Mapping, urn: str, team: str = "", teams: Teams | None = None
) -> list[Violation]:
    """A Kafka topic a team stack declares is the team's own (<team>--<name>) and within its tier's
    caps a topic (partitions, retention): infra/topic_quota.py, the rules validate applies."""
    if resource_type != KAFKA_TOPIC or not is_team_stack(team, teams):
        return []
    topic = _declared_topic(props)
    if topic is None:
        return []
    return [
        Violation(KAFKA_TOPIC_QUOTA, urn, message)
        for i, _, message in topic_quota.problems(team, _team_tier(team, teams), [topic])
        if i is not None
    ]


def kafka_topic_totals(resources: Sequence[Resource], team: str = "", teams: Teams | None = None) -> list[Violation]:
    """All the Kafka topics of a team stack together within its tier's cap a team (partitions)."""
    declared = [(r, _declared_topic(r.props)) for r in resources if r.type == KAFKA_TOPIC]
    topics = [t for _, t in declared if t is not None]
    if not topics or not is_team_stack(team, teams):
        return []
    return [
        Violation(KAFKA_TOPIC_QUOTA, declared[-1][0].urn, message)
        for i, _, message in topic_quota.problems(team, _team_tier(team, teams), topics)
        if i is None
    ]


# -- the catalog ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rule:
    name: str
    description: str
    check: Callable[..., list]


RESOURCE_RULES: tuple[Rule, ...] = (
    Rule(
        NO_PUBLIC_BUCKETS,
        "No public buckets: public access prevention enforced, uniform bucket-level "
        "access, no allUsers or allAuthenticatedUsers anywhere.",
        no_public_buckets,
    ),
    Rule(
        TEAM_ISOLATION,
        "No team is granted another team's resources: no reference to another team's "
        "identity, namespace, bucket or network range (firewalls, NetworkPolicy ipBlocks); "
        "Kubernetes objects only in the team's namespace; no project-wide roles beyond "
        "logging and monitoring.",
        team_isolation,
    ),
    Rule(
        LABELS_PRESENT,
        "Labels present: team, tier and managed-by on every labelable GCP resource; a team "
        "label on every Kubernetes object.",
        labels_present,
    ),
    Rule(
        NAME_LIMITS,
        "Names within GCP's and Kubernetes' limits (buckets, service accounts, Compute "
        "Engine, node pools, namespaces).",
        gcp_name_limits,
    ),
    Rule(NO_EXTERNAL_IPS, "No external IP addresses on instances.", no_external_ips),
    Rule(
        NO_CLUSTER_ROLE_BINDINGS, "No ClusterRoleBinding: RBAC stays in the team's namespace.", no_cluster_role_bindings
    ),
    Rule(
        KAFKA_TOPIC_QUOTA,
        "A team's Kafka topics are its own (<team>--<name>) and within its tier's caps a topic: partitions, retention.",
        kafka_topic_quota,
    ),
    Rule(
        SPARK_AUTHENTICATED,
        "Spark standalone authenticated, encrypted and with its UIs filtered: every "
        "spark-defaults.conf carries spark.authenticate and its secret, encrypted RPC "
        "without fallback, REST and kill off, the JWSFilter and its key, in a Secret; "
        "masters and workers read it read-only with --properties-file, as non-root.",
        spark_authenticated,
    ),
    Rule(
        OWN_MEMBERS,
        "Grants go to the team's own identities only (its service account and Kubernetes "
        "service accounts, its owners' group), never to users, groups, domains, principals, "
        "other accounts or everyone, and only on the team's own bucket, account or project.",
        grants_to_own_identities,
    ),
)
STACK_RULES: tuple[Rule, ...] = (
    Rule(NAMESPACE_GUARDS, "Every namespace has a ResourceQuota and a default-deny NetworkPolicy.", namespace_guards),
    Rule(
        REGISTERED_TEAM,
        "A team stack is a team of the platform's registry, under a name that is not "
        "reserved (platform, default, kube-*, gke-*, istio-*, ...).",
        registered_team,
    ),
    Rule(
        KAFKA_TOPIC_QUOTA,
        "A team's Kafka topics together within its tier's cap a team (partitions).",
        kafka_topic_totals,
    ),
    Rule(
        SPARK_CONF_DECLARED,
        "Each Spark master's and worker's --properties-file is a Secret of the stack whose "
        "spark-defaults.conf carries the authentication settings.",
        spark_conf_in_stack,
    ),
)


def check_resource(
    resource_type: str, props: Mapping, urn: str, team: str | None = None, teams: Teams | None = None
) -> list[Violation]:
    team = stack_of(urn) if team is None else team
    return [v for rule in RESOURCE_RULES for v in rule.check(resource_type, props, urn, team, teams)]


def check_stack(resources: Sequence[Resource], team: str | None = None, teams: Teams | None = None) -> list[Violation]:
    """Every rule, resource and stack, over one stack's resources."""
    if team is None:
        team = stack_of(resources[0].urn) if resources else ""
    out = [v for r in resources for v in check_resource(r.type, r.props, r.urn, team, teams)]
    out += [v for rule in STACK_RULES for v in rule.check(resources, team, teams)]
    return out
