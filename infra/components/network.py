"""TeamNetwork: the team's share of the VPC and, on GKE, its namespace with the walls around it.

VPC (both flavours): two firewall rules on the team's machines (network tag): ingress from the
team's own range on the Spark and Kafka ports, then a deny of everything else that outranks any
broad allow the project may carry (GKE's own rules, priority 1000, keep working). vm flavour: the
team's subnetwork (its range, Private Google Access) and a Cloud NAT of its own for installs.
On gke the team's range is its node pool's pod range instead (SparkCluster), so no subnetwork
(GCP refuses overlapping ranges in one VPC).

Kubernetes (gke flavour): a namespace with a ResourceQuota (the spec's quota) and a LimitRange,
a default-deny NetworkPolicy for ingress and egress, an allowance within the namespace, an
egress allowance to DNS, the platform's Kafka clusters, Google APIs and the metadata server, and
a Role bound to the team's owners group in that namespace only (no cluster-wide binding).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from .common import KAFKA_PORT, child_opts, component_type, k8s_labels

ALLOW_PRIORITY = 1000
DENY_PRIORITY = 2000
# private.googleapis.com: the platform's DNS zone points *.googleapis.com here (platform stack)
GOOGLE_APIS_RANGE = "199.36.153.8/30"
# the GKE metadata server (Workload Identity tokens)
METADATA_SERVER_RANGES = ("169.254.169.252/32", "169.254.169.254/32")
OWNER_VERBS_READ = ["get", "list", "watch"]


@dataclass(frozen=True)
class Quota:
    cpu: int
    memory_gb: int
    pods: int


@dataclass(frozen=True)
class NamespaceIsolation:
    """The Kubernetes side of a team's network (gke flavour)."""

    namespace: str
    quota: Quota
    max_container_cpu: int  # a container may not ask for more than a node has
    max_container_memory_gb: int
    owners_group: str | None  # the Google group (RBAC Group subject) of the team's owners;
    # None: no binding (the team has no grant)
    kafka_ranges: pulumi.Input[Sequence[str]]  # where the platform's shared Kafka clusters live


@dataclass(frozen=True)
class TeamNetworkArgs:
    team: str
    project: str
    region: str
    network: pulumi.Input[str]  # the platform VPC (self link)
    cidr: ipaddress.IPv4Network
    target_tag: str  # network tag on the team's instances and nodes
    allowed_ports: Sequence[str]  # tcp ports opened to the team's own range
    labels: Mapping[str, str] = field(default_factory=dict)
    subnetwork: bool = True  # vm flavour: the team's own subnetwork and NAT
    kubernetes: NamespaceIsolation | None = None


class TeamNetwork(pulumi.ComponentResource):
    subnetwork_id: pulumi.Output[str] | None
    namespace: pulumi.Output[str] | None

    def __init__(self, name: str, args: TeamNetworkArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(component_type("TeamNetwork"), name, None, opts)
        prefix = f"dagger-{args.team}"
        self.subnetwork_id = None
        if args.subnetwork:
            subnet = gcp.compute.Subnetwork(
                f"{name}-subnet",
                name=prefix,
                project=args.project,
                region=args.region,
                network=args.network,
                ip_cidr_range=str(args.cidr),
                private_ip_google_access=True,
                description=f"team {args.team}'s range (daggers infra)",
                log_config=gcp.compute.SubnetworkLogConfigArgs(
                    aggregation_interval="INTERVAL_5_SEC", flow_sampling=0.5, metadata="INCLUDE_ALL_METADATA"
                ),
                opts=child_opts(self),
            )
            self.subnetwork_id = subnet.id
            router = gcp.compute.Router(
                f"{name}-router",
                name=prefix,
                project=args.project,
                region=args.region,
                network=args.network,
                opts=child_opts(self),
            )
            gcp.compute.RouterNat(
                f"{name}-nat",
                name=prefix,
                project=args.project,
                region=args.region,
                router=router.name,
                nat_ip_allocate_option="AUTO_ONLY",
                source_subnetwork_ip_ranges_to_nat="LIST_OF_SUBNETWORKS",
                subnetworks=[
                    gcp.compute.RouterNatSubnetworkArgs(name=subnet.id, source_ip_ranges_to_nats=["ALL_IP_RANGES"])
                ],
                log_config=gcp.compute.RouterNatLogConfigArgs(enable=True, filter="ERRORS_ONLY"),
                opts=child_opts(self),
            )

        gcp.compute.Firewall(
            f"{name}-allow-team",
            name=f"{prefix}-allow-team",
            project=args.project,
            network=args.network,
            direction="INGRESS",
            priority=ALLOW_PRIORITY,
            source_ranges=[str(args.cidr)],
            target_tags=[args.target_tag],
            allows=[gcp.compute.FirewallAllowArgs(protocol="tcp", ports=list(args.allowed_ports))],
            description=f"team {args.team}: Spark and Kafka ports, from the team's own range only",
            log_config=gcp.compute.FirewallLogConfigArgs(metadata="INCLUDE_ALL_METADATA"),
            opts=child_opts(self),
        )
        gcp.compute.Firewall(
            f"{name}-deny-other",
            name=f"{prefix}-deny-other",
            project=args.project,
            network=args.network,
            direction="INGRESS",
            priority=DENY_PRIORITY,
            source_ranges=["0.0.0.0/0"],
            target_tags=[args.target_tag],
            denies=[gcp.compute.FirewallDenyArgs(protocol="all")],
            description=f"team {args.team}: everything its allow rule does not name is refused",
            log_config=gcp.compute.FirewallLogConfigArgs(metadata="INCLUDE_ALL_METADATA"),
            opts=child_opts(self),
        )

        self.namespace = None
        if args.kubernetes is not None:
            self.namespace = self._namespace(name, args, args.kubernetes)
        self.register_outputs({"subnetwork_id": self.subnetwork_id, "namespace": self.namespace})

    def _namespace(self, name: str, args: TeamNetworkArgs, iso: NamespaceIsolation) -> pulumi.Output[str]:
        labels = k8s_labels(args.labels, args.team)
        ns = k8s.core.v1.Namespace(
            f"{name}-namespace",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=iso.namespace, labels={**labels, "pod-security.kubernetes.io/enforce": "baseline"}
            ),
            opts=child_opts(self),
        )
        namespace = ns.metadata.name

        def meta(object_name: str) -> k8s.meta.v1.ObjectMetaArgs:
            return k8s.meta.v1.ObjectMetaArgs(name=object_name, namespace=namespace, labels=labels)

        k8s.core.v1.ResourceQuota(
            f"{name}-quota",
            metadata=meta("team-quota"),
            spec=k8s.core.v1.ResourceQuotaSpecArgs(
                hard={
                    "requests.cpu": str(iso.quota.cpu),
                    "limits.cpu": str(iso.quota.cpu),
                    "requests.memory": f"{iso.quota.memory_gb}Gi",
                    "limits.memory": f"{iso.quota.memory_gb}Gi",
                    "pods": str(iso.quota.pods),
                }
            ),
            opts=child_opts(self),
        )
        k8s.core.v1.LimitRange(
            f"{name}-limits",
            metadata=meta("team-limits"),
            spec=k8s.core.v1.LimitRangeSpecArgs(
                limits=[
                    k8s.core.v1.LimitRangeItemArgs(
                        type="Container",
                        default_request={"cpu": "250m", "memory": "512Mi"},
                        default={"cpu": "1", "memory": "2Gi"},
                        max={"cpu": str(iso.max_container_cpu), "memory": f"{iso.max_container_memory_gb}Gi"},
                    )
                ]
            ),
            opts=child_opts(self),
        )

        every_pod = k8s.meta.v1.LabelSelectorArgs()
        k8s.networking.v1.NetworkPolicy(
            f"{name}-default-deny",
            metadata=meta("default-deny"),
            spec=k8s.networking.v1.NetworkPolicySpecArgs(pod_selector=every_pod, policy_types=["Ingress", "Egress"]),
            opts=child_opts(self),
        )
        same_namespace = [k8s.networking.v1.NetworkPolicyPeerArgs(pod_selector=every_pod)]
        k8s.networking.v1.NetworkPolicy(
            f"{name}-allow-namespace",
            metadata=meta("allow-same-namespace"),
            spec=k8s.networking.v1.NetworkPolicySpecArgs(
                pod_selector=every_pod,
                policy_types=["Ingress", "Egress"],
                ingress=[k8s.networking.v1.NetworkPolicyIngressRuleArgs(from_=same_namespace)],
                egress=[k8s.networking.v1.NetworkPolicyEgressRuleArgs(to=same_namespace)],
            ),
            opts=child_opts(self),
        )

        def tcp(*ports: int) -> list[k8s.networking.v1.NetworkPolicyPortArgs]:
            return [k8s.networking.v1.NetworkPolicyPortArgs(protocol="TCP", port=p) for p in ports]

        kube_dns = k8s.networking.v1.NetworkPolicyPeerArgs(
            namespace_selector=k8s.meta.v1.LabelSelectorArgs(
                match_labels={"kubernetes.io/metadata.name": "kube-system"}
            ),
            pod_selector=k8s.meta.v1.LabelSelectorArgs(match_labels={"k8s-app": "kube-dns"}),
        )
        kafka_peers = pulumi.Output.from_input(iso.kafka_ranges).apply(
            lambda ranges: [
                k8s.networking.v1.NetworkPolicyPeerArgs(ip_block=k8s.networking.v1.IPBlockArgs(cidr=r)) for r in ranges
            ]
        )
        k8s.networking.v1.NetworkPolicy(
            f"{name}-allow-egress",
            metadata=meta("allow-platform-egress"),
            spec=k8s.networking.v1.NetworkPolicySpecArgs(
                pod_selector=every_pod,
                policy_types=["Egress"],
                egress=[
                    k8s.networking.v1.NetworkPolicyEgressRuleArgs(
                        to=[kube_dns],
                        ports=[k8s.networking.v1.NetworkPolicyPortArgs(protocol="UDP", port=53), *tcp(53)],
                    ),
                    # the shared Kafka clusters the team reads (and its mirrors replicate from)
                    k8s.networking.v1.NetworkPolicyEgressRuleArgs(to=kafka_peers, ports=tcp(KAFKA_PORT)),
                    # checkpoints in GCS through Private Google Access, and Workload Identity tokens
                    k8s.networking.v1.NetworkPolicyEgressRuleArgs(
                        to=[
                            k8s.networking.v1.NetworkPolicyPeerArgs(
                                ip_block=k8s.networking.v1.IPBlockArgs(cidr=GOOGLE_APIS_RANGE)
                            )
                        ],
                        ports=tcp(443),
                    ),
                    k8s.networking.v1.NetworkPolicyEgressRuleArgs(
                        to=[
                            k8s.networking.v1.NetworkPolicyPeerArgs(ip_block=k8s.networking.v1.IPBlockArgs(cidr=c))
                            for c in METADATA_SERVER_RANGES
                        ],
                        ports=tcp(80, 988),
                    ),
                ],
            ),
            opts=child_opts(self),
        )

        role = k8s.rbac.v1.Role(
            f"{name}-owners-role",
            metadata=meta("dagger-owner"),
            rules=[
                k8s.rbac.v1.PolicyRuleArgs(
                    api_groups=[""],
                    verbs=OWNER_VERBS_READ,
                    resources=[
                        "pods",
                        "pods/log",
                        "services",
                        "endpoints",
                        "configmaps",
                        "events",
                        "persistentvolumeclaims",
                        "resourcequotas",
                        "limitranges",
                        "serviceaccounts",
                    ],
                ),
                k8s.rbac.v1.PolicyRuleArgs(api_groups=[""], verbs=["delete"], resources=["pods"]),
                k8s.rbac.v1.PolicyRuleArgs(api_groups=[""], verbs=["create"], resources=["pods/portforward"]),
                k8s.rbac.v1.PolicyRuleArgs(
                    api_groups=["apps"], verbs=[*OWNER_VERBS_READ, "patch"], resources=["deployments", "statefulsets"]
                ),
                k8s.rbac.v1.PolicyRuleArgs(
                    api_groups=["networking.k8s.io"], verbs=OWNER_VERBS_READ, resources=["networkpolicies"]
                ),
            ],
            opts=child_opts(self),
        )
        if iso.owners_group is None:
            return namespace
        k8s.rbac.v1.RoleBinding(
            f"{name}-owners-binding",
            metadata=meta("dagger-owners"),
            role_ref=k8s.rbac.v1.RoleRefArgs(
                api_group="rbac.authorization.k8s.io", kind="Role", name=role.metadata.name
            ),
            subjects=[
                k8s.rbac.v1.SubjectArgs(kind="Group", name=iso.owners_group, api_group="rbac.authorization.k8s.io")
            ],
            opts=child_opts(self),
        )
        return namespace
