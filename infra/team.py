"""A team's stack: TeamPlatform composes the components from one TeamSpec.

team_program() is what `pulumi up -s <team>` runs (via __main__) and what infra.mocks.declare()
runs in process: it reads the platform stack through a StackReference, builds the Kubernetes
provider from the platform's kubeconfig (gke flavour) and declares TeamPlatform.

Every name comes from the spec (spec.namespace, spec.service_account_id, spec.bucket_name), every
resource that takes labels carries spec.all_labels, and the only identity granted anything is
the team's own service account. The owners' Kubernetes access goes to the Google group the
platform team declares in the team's grant (infra/grants/<team>.yaml), which the cluster resolves
through Google Groups for RBAC (platform_stack).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from . import grants, kafka_access, platform_stack
from .components import (
    CheckpointBucket,
    CheckpointBucketArgs,
    GkePlacement,
    KafkaMirror,
    KafkaMirrorArgs,
    MirrorOnGke,
    MirrorOnVms,
    NamespaceIsolation,
    Quota,
    SparkCluster,
    SparkClusterArgs,
    TeamIdentity,
    TeamIdentityArgs,
    TeamNetwork,
    TeamNetworkArgs,
    VmPlacement,
    WorkloadIdentity,
)
from .components.common import KAFKA_PORTS, SPARK_PORTS, SSH_PORT, component_type, merge_inventories
from .spec import Platform, TeamSpec
from .tiers import MIRROR_BROKERS

# Project-level roles a team's service account gets, by flavour; nothing else is granted at the
# project level (the bucket grant is on the bucket).
PROJECT_ROLES: dict[str, tuple[str, ...]] = {
    "vm": ("roles/logging.logWriter", "roles/monitoring.metricWriter"),
    # the GKE node role for the team's node pool, which runs as the team's account
    "gke": ("roles/logging.logWriter", "roles/monitoring.metricWriter", "roles/container.defaultNodeServiceAccount"),
}
DEFAULT_GROUPS_DOMAIN = grants.GROUPS_DOMAIN
OUTPUT_NAMES = (
    "spark_master_url",
    "checkpoint_url",
    "mirror_bootstrap_servers",
    "inventory",
    "namespace",
    "service_account_email",
    "kafka_acls",
    "kafka_topics",
    "spark_auth_secret",
    "spark_ui_key",
)
# gke: the Spark cluster's RPC secret and UI key, for the operator's cluster file (auth_secret_file,
# ui_key_file: `pulumi stack output --show-secrets spark_auth_secret > <file>`, 0600); secret in the
# state and in every output; none on vm, where the Ansible role keeps them on the controller
SECRET_OUTPUT_NAMES = ("spark_auth_secret", "spark_ui_key")


def owners_group(spec: TeamSpec, domain: str = DEFAULT_GROUPS_DOMAIN, grants_dir=grants.GRANTS_DIR) -> str | None:
    """The Google group (Kubernetes RBAC Group) of the team's owners, as the team's grant declares
    it; None when the team has no grant (then nobody is bound: validate refuses such a spec).
    `domain` is the one the cluster's security group resolves groups of; a group elsewhere would
    match nobody, so it is refused here rather than bound in vain."""
    grant = grants.find(spec.name, grants_dir)
    if grant is None:
        return None
    if grant.rbac_group.rpartition("@")[2] != domain:
        raise ValueError(
            f"{grant.where('rbac_group')}: {grant.rbac_group} is not a group of {domain}, the "
            f"domain the cluster's RBAC resolves groups of (gke-security-groups@{domain})"
        )
    return grant.rbac_group


def network_tag(spec: TeamSpec) -> str:
    return f"dagger-{spec.name}"


@dataclass(frozen=True)
class SharedPlatform:
    """The platform stack's outputs that a team stack uses (platform_stack.OUTPUTS)."""

    project: pulumi.Input[str]
    network: pulumi.Input[str]
    gke_cluster: pulumi.Input[str]
    gke_location: pulumi.Input[str]
    workload_pool: pulumi.Input[str]
    kubeconfig: pulumi.Input[str]
    kafka_ranges: pulumi.Input[Mapping[str, str]]  # shared Kafka cluster -> its network range

    @classmethod
    def from_stack_reference(cls, ref: pulumi.StackReference) -> SharedPlatform:
        return cls(**{name: ref.require_output(name) for name in platform_stack.OUTPUTS})


@dataclass(frozen=True)
class TeamPlatformArgs:
    spec: TeamSpec
    platform: Platform
    shared: SharedPlatform
    owners_group: str | None  # None: no owners' RoleBinding


class TeamPlatform(pulumi.ComponentResource):
    spark_master_url: pulumi.Output[str]
    checkpoint_url: pulumi.Output[str]
    mirror_bootstrap_servers: pulumi.Output[dict[str, str]]
    inventory: pulumi.Output[dict] | None
    namespace: pulumi.Output[str] | None
    service_account_email: pulumi.Output[str]

    def __init__(self, name: str, args: TeamPlatformArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(component_type("TeamPlatform"), name, None, opts)
        spec, platform, shared = args.spec, args.platform, args.shared
        on_gke = spec.spark.flavour == "gke"
        labels = spec.all_labels
        tag = network_tag(spec)
        child = pulumi.ResourceOptions(parent=self)

        network = TeamNetwork(
            f"{name}-network",
            TeamNetworkArgs(
                team=spec.name,
                project=platform.project,
                region=spec.region,
                network=shared.network,
                cidr=spec.cidr,
                target_tag=tag,
                labels=labels,
                subnetwork=not on_gke,
                allowed_ports=(*SPARK_PORTS, *KAFKA_PORTS) if on_gke else (*SPARK_PORTS, *KAFKA_PORTS, SSH_PORT),
                kubernetes=NamespaceIsolation(
                    namespace=spec.namespace,
                    quota=Quota(spec.quota.cpu, spec.quota.memory_gb, spec.quota.pods),
                    max_container_cpu=spec.spark.worker_cores,
                    max_container_memory_gb=spec.spark.worker_memory_gb,
                    owners_group=args.owners_group,
                    # egress to the shared Kafka clusters the team reads, not to every cluster: which clusters
                    # a tier may read is enforced in the network too, not only in the spec
                    kafka_ranges=pulumi.Output.from_input(shared.kafka_ranges).apply(
                        lambda ranges: sorted({ranges[k.cluster] for k in spec.kafka})
                    ),
                )
                if on_gke
                else None,
            ),
            opts=child,
        )

        identity = TeamIdentity(
            f"{name}-identity",
            TeamIdentityArgs(
                team=spec.name,
                project=platform.project,
                account_id=spec.service_account_id,
                project_roles=PROJECT_ROLES[spec.spark.flavour],
                labels=labels,
                workload_identity=WorkloadIdentity(namespace=network.namespace, workload_pool=shared.workload_pool)
                if on_gke
                else None,
            ),
            opts=child,
        )

        bucket = CheckpointBucket(
            f"{name}-checkpoints",
            CheckpointBucketArgs(
                team=spec.name,
                project=platform.project,
                bucket_name=spec.bucket_name(platform.project),
                location=spec.region,
                retention_days=spec.checkpoint_retention_days,
                writer_member=identity.member,
                labels=labels,
            ),
            opts=child,
        )

        zones = (
            None
            if on_gke
            else gcp.compute.get_zones_output(project=platform.project, region=spec.region, status="UP").names
        )
        spark = SparkCluster(
            f"{name}-spark",
            SparkClusterArgs(
                team=spec.name,
                project=platform.project,
                workers=spec.spark.workers,
                worker_cores=spec.spark.worker_cores,
                worker_memory_gb=spec.spark.worker_memory_gb,
                machine_type=spec.spark.machine_type,
                service_account_email=identity.email,
                labels=labels,
                gke=GkePlacement(
                    cluster=shared.gke_cluster,
                    location=shared.gke_location,
                    namespace=network.namespace,
                    service_account_name=identity.ksa_name,
                    pod_range=spec.cidr,
                    network_tag=tag,
                )
                if on_gke
                else None,
                vm=None if on_gke else VmPlacement(zones=zones, subnetwork=network.subnetwork_id, network_tags=[tag]),
            ),
            opts=child,
        )

        mirrors: dict[str, KafkaMirror] = {}
        for read in spec.kafka:
            if not read.mirrored:
                continue
            source = platform.kafka_clusters[read.cluster]
            mirrors[read.cluster] = KafkaMirror(
                f"{name}-mirror-{read.cluster}",
                KafkaMirrorArgs(
                    team=spec.name,
                    source_alias=read.cluster,
                    source_bootstrap_servers=source.bootstrap_servers,
                    topics=read.topics,
                    brokers=MIRROR_BROKERS[spec.tier],
                    labels=labels,
                    gke=MirrorOnGke(namespace=network.namespace) if on_gke else None,
                    vm=None
                    if on_gke
                    else MirrorOnVms(
                        project=platform.project,
                        zones=zones,
                        subnetwork=network.subnetwork_id,
                        network_tags=[tag],
                        service_account_email=identity.email,
                    ),
                ),
                opts=child,
            )

        self.spark_master_url = spark.master_url
        self.spark_auth_secret, self.spark_ui_key = spark.auth_secret, spark.ui_key
        self.checkpoint_url = bucket.checkpoint_url
        self.mirror_bootstrap_servers = (
            pulumi.Output.all(**{alias: m.bootstrap_servers for alias, m in mirrors.items()})
            if mirrors
            else pulumi.Output.from_input({})
        )
        self.namespace = network.namespace
        self.service_account_email = identity.email
        # what the platform's Kafka tooling applies on the shared clusters for this team (its daggers'
        # principal and each mirror's MirrorMaker): data, since no Kafka provider runs here
        self.kafka_acls = [
            acl.as_dict() for acl in (*kafka_access.acls_for(spec, platform), *kafka_access.mirror_acls(spec, platform))
        ]
        # the team's own topics, which the same tooling creates as listed (the team has no CREATE):
        # checked against its tier's caps by validate (infra/topic_quota.py)
        self.kafka_topics = [
            {"cluster": t.cluster, "name": t.name, "partitions": t.partitions, "config": t.config}
            for t in spec.own_topics
        ]
        self.inventory = None
        if not on_gke:
            team_vars = {"all": {"vars": {"daggers_team": spec.name, "daggers_tier": spec.tier}}}
            self.inventory = pulumi.Output.all(
                spark.inventory, self.checkpoint_url, *[m.inventory for m in mirrors.values()]
            ).apply(
                lambda parts: merge_inventories(
                    team_vars, {"all": {"vars": {"daggers_checkpoint_url": parts[1]}}}, parts[0], *parts[2:]
                )
            )
        self.register_outputs(self.outputs())

    def outputs(self) -> dict[str, Any]:
        """The stack outputs other parts read (OUTPUT_NAMES)."""
        return {name: getattr(self, name) for name in OUTPUT_NAMES}


def team_program(
    spec: TeamSpec, platform: Platform, *, platform_stack_name: str, groups_domain: str = DEFAULT_GROUPS_DOMAIN
) -> TeamPlatform:
    """Declare one team's stack. platform_stack_name: the platform stack to read (StackReference)."""
    ref = pulumi.StackReference(f"{spec.name}-platform", stack_name=platform_stack_name)
    shared = SharedPlatform.from_stack_reference(ref)
    opts = None
    if spec.spark.flavour == "gke":
        provider = k8s.Provider(f"{spec.name}-gke", kubeconfig=shared.kubeconfig, enable_server_side_apply=True)
        opts = pulumi.ResourceOptions(providers=[provider])
    return TeamPlatform(
        spec.name,
        TeamPlatformArgs(spec=spec, platform=platform, shared=shared, owners_group=owners_group(spec, groups_domain)),
        opts=opts,
    )
