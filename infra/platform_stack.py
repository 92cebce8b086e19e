"""The `platform` stack: what every team stack shares, owned by the platform team.

The VPC (custom subnets only), a subnetwork and Cloud NAT for the GKE cluster, a private DNS
zone sending *.googleapis.com to Private Google Access, and the GKE cluster itself (private
nodes, Workload Identity, network policy enforced by Dataplane V2, Google Groups for RBAC) with a
small system node pool; team node pools are tainted, so kube-system runs here.

Team stacks read OUTPUTS through a StackReference (team.SharedPlatform). The platform's own
ranges sit outside `network_range` of platform.yaml, which is the teams' space.
"""

from __future__ import annotations

import ipaddress
import textwrap

import pulumi
import pulumi_gcp as gcp

from .grants import SECURITY_GROUP
from .spec import Platform, load_platform

STACK = "platform"

# The platform's own ranges; none may overlap platform.yaml's network_range (the teams').
GKE_NODES_RANGE = "10.0.0.0/20"
GKE_PODS_RANGE = "10.4.0.0/14"
GKE_SERVICES_RANGE = "10.8.0.0/20"
GKE_CONTROL_PLANE_RANGE = "172.16.0.0/28"
PRIVATE_GOOGLE_ACCESS = ("199.36.153.8", "199.36.153.9", "199.36.153.10", "199.36.153.11")
SYSTEM_MACHINE_TYPE = "e2-standard-4"
SYSTEM_ROLES = ("roles/container.defaultNodeServiceAccount",)

# What team stacks read (team.SharedPlatform); the platform program exports exactly these.
OUTPUTS = ("project", "network", "gke_cluster", "gke_location", "workload_pool", "kubeconfig", "kafka_ranges")


def platform_ranges(platform: Platform | None = None) -> dict[str, ipaddress.IPv4Network]:
    platform = platform or load_platform()
    ranges = {
        "gke nodes": GKE_NODES_RANGE,
        "gke pods": GKE_PODS_RANGE,
        "gke services": GKE_SERVICES_RANGE,
        "gke control plane": GKE_CONTROL_PLANE_RANGE,
    }
    # where the shared Kafka clusters of platform.yaml listen
    ranges.update({f"kafka {name}": c.network_range for name, c in platform.kafka_clusters.items()})
    return {name: ipaddress.IPv4Network(r) for name, r in ranges.items()}


def kubeconfig(name: str, endpoint: str, ca_certificate: str) -> str:
    """A kubeconfig that authenticates with gke-gcloud-auth-plugin (the engineer's own credentials)."""
    return textwrap.dedent(f"""\
        apiVersion: v1
        kind: Config
        clusters:
        - name: {name}
          cluster:
            certificate-authority-data: {ca_certificate}
            server: https://{endpoint}
        contexts:
        - name: {name}
          context: {{cluster: {name}, user: {name}}}
        current-context: {name}
        users:
        - name: {name}
          user:
            exec:
              apiVersion: client.authentication.k8s.io/v1beta1
              command: gke-gcloud-auth-plugin
              installHint: install gke-gcloud-auth-plugin (gcloud components install gke-gcloud-auth-plugin)
              provideClusterInfo: true
        """)


def platform_program(platform: Platform) -> dict[str, pulumi.Output]:
    """Declare the shared resources; returns the stack outputs (names: OUTPUTS)."""
    project, region = platform.project, platform.region
    labels = {"managed-by": "daggers-infra", "team": "platform", "tier": "platform"}
    network = gcp.compute.Network(
        "platform-network",
        name=platform.network,
        project=project,
        auto_create_subnetworks=False,
        routing_mode="REGIONAL",
    )
    subnet = gcp.compute.Subnetwork(
        "platform-gke-subnet",
        name=f"{platform.gke_cluster}-nodes",
        project=project,
        region=region,
        network=network.id,
        ip_cidr_range=GKE_NODES_RANGE,
        private_ip_google_access=True,
        secondary_ip_ranges=[
            gcp.compute.SubnetworkSecondaryIpRangeArgs(range_name="pods", ip_cidr_range=GKE_PODS_RANGE),
            gcp.compute.SubnetworkSecondaryIpRangeArgs(range_name="services", ip_cidr_range=GKE_SERVICES_RANGE),
        ],
    )
    router = gcp.compute.Router(
        "platform-router", name=f"{platform.gke_cluster}-nat", project=project, region=region, network=network.id
    )
    gcp.compute.RouterNat(
        "platform-nat",
        name=f"{platform.gke_cluster}-nat",
        project=project,
        region=region,
        router=router.name,
        nat_ip_allocate_option="AUTO_ONLY",
        source_subnetwork_ip_ranges_to_nat="LIST_OF_SUBNETWORKS",
        subnetworks=[gcp.compute.RouterNatSubnetworkArgs(name=subnet.id, source_ip_ranges_to_nats=["ALL_IP_RANGES"])],
        log_config=gcp.compute.RouterNatLogConfigArgs(enable=True, filter="ERRORS_ONLY"),
    )

    zone = gcp.dns.ManagedZone(
        "platform-googleapis-zone",
        name="googleapis",
        dns_name="googleapis.com.",
        project=project,
        visibility="private",
        labels=labels,
        private_visibility_config=gcp.dns.ManagedZonePrivateVisibilityConfigArgs(
            networks=[gcp.dns.ManagedZonePrivateVisibilityConfigNetworkArgs(network_url=network.id)]
        ),
    )
    gcp.dns.RecordSet(
        "platform-googleapis-a",
        managed_zone=zone.name,
        project=project,
        name="private.googleapis.com.",
        type="A",
        ttl=300,
        rrdatas=list(PRIVATE_GOOGLE_ACCESS),
    )
    gcp.dns.RecordSet(
        "platform-googleapis-cname",
        managed_zone=zone.name,
        project=project,
        name="*.googleapis.com.",
        type="CNAME",
        ttl=300,
        rrdatas=["private.googleapis.com."],
    )

    workload_pool = f"{project}.svc.id.goog"
    cluster = gcp.container.Cluster(
        "platform-gke",
        name=platform.gke_cluster,
        project=project,
        location=region,
        network=network.id,
        subnetwork=subnet.id,
        networking_mode="VPC_NATIVE",
        remove_default_node_pool=True,
        initial_node_count=1,
        deletion_protection=True,
        ip_allocation_policy=gcp.container.ClusterIpAllocationPolicyArgs(
            cluster_secondary_range_name="pods", services_secondary_range_name="services"
        ),
        private_cluster_config=gcp.container.ClusterPrivateClusterConfigArgs(
            enable_private_nodes=True, enable_private_endpoint=False, master_ipv4_cidr_block=GKE_CONTROL_PLANE_RANGE
        ),
        workload_identity_config=gcp.container.ClusterWorkloadIdentityConfigArgs(workload_pool=workload_pool),
        # Dataplane V2 enforces NetworkPolicy (the teams' default-deny and allowances)
        datapath_provider="ADVANCED_DATAPATH",
        release_channel=gcp.container.ClusterReleaseChannelArgs(channel="REGULAR"),
        # Google Groups for RBAC: without it a RoleBinding naming a group matches nobody, and each
        # team's owners' group (infra/grants/<team>.yaml) must be nested in this group
        authenticator_groups_config=gcp.container.ClusterAuthenticatorGroupsConfigArgs(security_group=SECURITY_GROUP),
        enable_shielded_nodes=True,
        resource_labels=labels,
    )

    system_sa = gcp.serviceaccount.Account(
        "platform-system-gsa",
        project=project,
        account_id="daggers-gke-system",
        display_name="daggers: GKE system nodes",
    )
    system_member = system_sa.email.apply(lambda e: f"serviceAccount:{e}")
    for role in SYSTEM_ROLES:
        gcp.projects.IAMMember(
            f"platform-system-{role.split('/')[-1].replace('.', '-').lower()}",
            project=project,
            role=role,
            member=system_member,
        )
    gcp.container.NodePool(
        "platform-system-pool",
        name="system",
        project=project,
        cluster=cluster.id,
        location=region,
        node_count=1,
        management=gcp.container.NodePoolManagementArgs(auto_repair=True, auto_upgrade=True),
        node_config=gcp.container.NodePoolNodeConfigArgs(
            machine_type=SYSTEM_MACHINE_TYPE,
            service_account=system_sa.email,
            resource_labels=labels,
            oauth_scopes=["https://www.googleapis.com/auth/cloud-platform"],
            workload_metadata_config=gcp.container.NodePoolNodeConfigWorkloadMetadataConfigArgs(mode="GKE_METADATA"),
            shielded_instance_config=gcp.container.NodePoolNodeConfigShieldedInstanceConfigArgs(
                enable_secure_boot=True, enable_integrity_monitoring=True
            ),
        ),
    )

    # (attributes lifted one by one: Output.all would turn the nested output type into a dict)
    config = pulumi.Output.all(cluster.name, cluster.endpoint, cluster.master_auth.cluster_ca_certificate).apply(
        lambda v: kubeconfig(*v)
    )
    return {
        "project": pulumi.Output.from_input(project),
        "network": network.self_link,
        "gke_cluster": cluster.id,
        "gke_location": cluster.location,
        "workload_pool": pulumi.Output.from_input(workload_pool),
        "kubeconfig": pulumi.Output.secret(config),
        # each shared Kafka cluster's range: a team's egress reaches only the clusters it reads
        "kafka_ranges": pulumi.Output.from_input(
            {name: c.network_range for name, c in platform.kafka_clusters.items()}
        ),
    }
