"""KafkaMirror: a replica of one shared Kafka cluster, owned by one team, in the team's region.

Two parts: the mirror's own Kafka (KRaft, `brokers` nodes; what the team's daggers read after a
failover, output `bootstrap_servers`) and MirrorMaker 2 replicating source -> local one way.

MirrorMaker 2 is configured as anchors.md advises:
  - IdentityReplicationPolicy, so topics keep their names and a dagger's SQL needs no change on
    failover. MM2's dedicated mode gives every connector (source, checkpoint, heartbeat) the
    top-level `replication.policy.*` settings, then the flow's `source->local.` ones; both are
    set, so the source and checkpoint connectors agree whichever MM2 reads.
  - checkpoints emitted and consumer-group offsets synced to the mirror. Spark does not commit
    its offsets to Kafka groups, so this helps only daggers that commit their progress to a
    group; the others fail over with translated startingOffsets or by timestamp, and a new
    checkpoint (translated offsets may trail: at-least-once, idempotent sinks).
  - offset syncs kept on the target: the mirror only reads the shared cluster.

gke: a StatefulSet of brokers with a headless Service, a ConfigMap holding mm2.properties and a
Deployment running connect-mirror-maker, all in the team's namespace, on the team's nodes.
vm: instances that the Ansible roles turn into brokers and MirrorMaker 2 (groups kafka_mirror,
mirror_maker and one group per source cluster carrying its mm2.properties).
"""

from __future__ import annotations

import base64
import hashlib
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import javaproperties
import pulumi
import pulumi_kubernetes as k8s

from ..tiers import MIRROR_BROKER_CPU, MIRROR_BROKER_MEMORY_GB, MIRROR_MM2_CPU, MIRROR_MM2_MEMORY_GB
from .common import (
    KAFKA_CONTROLLER_PORT,
    KAFKA_IMAGE,
    KAFKA_PORT,
    ansible_group,
    child_opts,
    component_type,
    internal_ip,
    inventory_of,
    k8s_labels,
    private_instance,
    team_node_selector,
    team_tolerations,
)

IDENTITY_POLICY = "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"
LOCAL_ALIAS = "local"
MIRROR_MACHINE_TYPE = "e2-standard-4"
BROKER_CPU, BROKER_MEMORY = f"{MIRROR_BROKER_CPU}", f"{MIRROR_BROKER_MEMORY_GB}Gi"
MM2_CPU, MM2_MEMORY = f"{int(MIRROR_MM2_CPU * 1000)}m", f"{MIRROR_MM2_MEMORY_GB}Gi"
MM2_CONFIG_KEY = "mm2.properties"


FILE_CONFIG_PROVIDER = "org.apache.kafka.common.config.provider.FileConfigProvider"
SECRETS_DIR = "/etc/mm2/secrets"
# printable text on one line, no ',' (MM2 splits `topics` on commas): spec validation refuses
# the rest with the field and line; this is the writer's own guard
_UNSAFE_IN_PATTERN = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029,]")


def source_secret_file(source_alias: str) -> str:
    """Where MM2 reads the source cluster's SASL login (a Secret mounted from out of band)."""
    return f"{SECRETS_DIR}/{source_alias}.properties"


def mm2_settings(
    *,
    source_alias: str,
    source_bootstrap_servers: str,
    local_bootstrap_servers: str,
    topics: Sequence[str],
    replication_factor: int,
    tasks_max: int = 4,
) -> dict[str, str]:
    """The settings of a one-way mirror of source_alias into `local`, as a dict (mm2_properties writes it)."""
    for pattern in topics:
        if not pattern or _UNSAFE_IN_PATTERN.search(pattern):
            raise ValueError(f"topic pattern {pattern!r}: a control character or ',' cannot go into mm2.properties")
    if not topics:
        raise ValueError("no topic patterns: a mirror of nothing")
    flow, back = f"{source_alias}->{LOCAL_ALIAS}", f"{LOCAL_ALIAS}->{source_alias}"
    rf = str(replication_factor)
    return {
        "clusters": f"{source_alias}, {LOCAL_ALIAS}",
        # the source is the shared cluster: the mirror's own principal, its password by reference
        f"{source_alias}.bootstrap.servers": source_bootstrap_servers,
        f"{source_alias}.security.protocol": "SASL_SSL",
        f"{source_alias}.sasl.mechanism": "SCRAM-SHA-512",
        f"{source_alias}.sasl.jaas.config": f"${{file:{source_secret_file(source_alias)}:sasl.jaas.config}}",
        "config.providers": "file",
        "config.providers.file.class": FILE_CONFIG_PROVIDER,
        f"{LOCAL_ALIAS}.bootstrap.servers": local_bootstrap_servers,
        f"{flow}.enabled": "true",
        f"{flow}.topics": ", ".join(topics),  # MM2 splits on ',' and trims
        # topics keep their names on the mirror; every connector (source AND checkpoint) gets the
        # top-level replication.policy.*, and the flow's own setting says the same
        "replication.policy.class": IDENTITY_POLICY,
        f"{flow}.replication.policy.class": IDENTITY_POLICY,
        # one way: MM2 starts a heartbeat connector for every pair, enabled or not, and it writes
        # to the pair's target; only the flow into `local` may emit them
        f"{back}.enabled": "false",
        "emit.heartbeats.enabled": "false",
        f"{flow}.emit.heartbeats.enabled": "true",
        f"{back}.emit.heartbeats.enabled": "false",
        f"{back}.emit.checkpoints.enabled": "false",
        # consumer-group offsets translated and written to the mirror (daggers that commit to a group)
        "emit.checkpoints.enabled": "true",
        "emit.checkpoints.interval.seconds": "10",
        "sync.group.offsets.enabled": "true",
        "sync.group.offsets.interval.seconds": "10",
        # the mirror writes nothing to the shared cluster: offset syncs on the target too
        "offset-syncs.topic.location": "target",
        "sync.topic.configs.enabled": "true",
        "sync.topic.acls.enabled": "false",
        "refresh.topics.interval.seconds": "60",
        "refresh.groups.interval.seconds": "60",
        "tasks.max": str(tasks_max),
        "replication.factor": rf,
        "checkpoints.topic.replication.factor": rf,
        "heartbeats.topic.replication.factor": rf,
        "offset-syncs.topic.replication.factor": rf,
        "offset.storage.replication.factor": rf,
        "status.storage.replication.factor": rf,
        "config.storage.replication.factor": rf,
    }


def mm2_properties(
    *,
    source_alias: str,
    source_bootstrap_servers: str,
    local_bootstrap_servers: str,
    topics: Sequence[str],
    replication_factor: int,
    tasks_max: int = 4,
) -> str:
    """mm2.properties for a one-way mirror of source_alias into `local`, written by javaproperties
    (every key and value escaped as Java's Properties.load reads it back).

    MM2 logs in to the source with SCRAM-SHA-512 over TLS as the mirror's own principal
    (User:mm2-<team>-<source>, ACLs from infra/kafka_access.py). Its JAAS line is not here: the
    FileConfigProvider reads it from /etc/mm2/secrets/<source>.properties, a file (on GKE a
    Kubernetes Secret mm2-<source>-credentials) that is created out of band, by whoever creates
    the SCRAM user, so no password passes through Pulumi's state or this file. Run MM2 with
    `--clusters local`: dedicated mode then runs only the connectors whose target is `local`.
    """
    settings = mm2_settings(
        source_alias=source_alias,
        source_bootstrap_servers=source_bootstrap_servers,
        local_bootstrap_servers=local_bootstrap_servers,
        topics=topics,
        replication_factor=replication_factor,
        tasks_max=tasks_max,
    )
    header = (
        f" MirrorMaker 2: {source_alias} -> {LOCAL_ALIAS}, one way (managed by daggers infra)\n"
        " the mirror writes nothing to the shared cluster: run with --clusters local; heartbeats,\n"
        " checkpoints and offset syncs go to the mirror only"
    )
    return javaproperties.dumps(settings, comments=header, timestamp=False)


def parse_properties(text: str) -> dict[str, str]:
    """mm2.properties read as MirrorMaker reads it (java.util.Properties rules: javaproperties.loads)."""
    return javaproperties.loads(text)


def kraft_cluster_id(team: str, source_alias: str) -> str:
    """A stable KRaft cluster id (22 characters, base64url of a UUID) for one team's mirror."""
    raw = uuid.uuid5(uuid.NAMESPACE_URL, f"https://daggers.dev/{team}/mirror/{source_alias}").bytes
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


@dataclass(frozen=True)
class MirrorOnGke:
    namespace: pulumi.Input[str]
    storage_class: str = "premium-rwo"


@dataclass(frozen=True)
class MirrorOnVms:
    project: str
    zones: pulumi.Input[Sequence[str]]
    subnetwork: pulumi.Input[str]
    network_tags: Sequence[str]
    service_account_email: pulumi.Input[str]


@dataclass(frozen=True)
class KafkaMirrorArgs:
    team: str
    source_alias: str  # the shared cluster's name in the platform catalog
    source_bootstrap_servers: str
    topics: Sequence[str]
    brokers: int  # the mirror's own Kafka; its replication factor too
    labels: Mapping[str, str] = field(default_factory=dict)
    disk_gb: int = 200
    gke: MirrorOnGke | None = None
    vm: MirrorOnVms | None = None

    def __post_init__(self) -> None:
        if (self.gke is None) == (self.vm is None):
            raise ValueError("KafkaMirrorArgs: give exactly one of gke= or vm=")

    @property
    def replication_factor(self) -> int:
        return min(3, self.brokers)


class KafkaMirror(pulumi.ComponentResource):
    bootstrap_servers: pulumi.Output[str]
    mm2_properties: pulumi.Output[str]
    inventory: pulumi.Output[dict] | None  # vm flavour only

    def __init__(self, name: str, args: KafkaMirrorArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(component_type("KafkaMirror"), name, None, opts)
        self.inventory = None
        if args.gke is not None:
            self.bootstrap_servers = self._on_gke(name, args, args.gke)
        else:
            self.bootstrap_servers = self._on_vms(name, args, args.vm)
        self.register_outputs(
            {
                "bootstrap_servers": self.bootstrap_servers,
                "mm2_properties": self.mm2_properties,
                "inventory": self.inventory,
            }
        )

    def _properties(self, args: KafkaMirrorArgs, local: pulumi.Input[str]) -> pulumi.Output[str]:
        return pulumi.Output.from_input(local).apply(
            lambda servers: mm2_properties(
                source_alias=args.source_alias,
                source_bootstrap_servers=args.source_bootstrap_servers,
                local_bootstrap_servers=servers,
                topics=args.topics,
                replication_factor=args.replication_factor,
            )
        )

    # -- gke -------------------------------------------------------------------------------------
    def _on_gke(self, name: str, args: KafkaMirrorArgs, gke: MirrorOnGke) -> pulumi.Output[str]:
        kafka_name, mm2_name = f"kafka-mirror-{args.source_alias}", f"mm2-{args.source_alias}"
        kafka_labels = k8s_labels(args.labels, args.team, kafka_name)
        mm2_labels = k8s_labels(args.labels, args.team, mm2_name)
        rf = args.replication_factor

        def meta(object_name: str, labels: Mapping[str, str], **extra) -> k8s.meta.v1.ObjectMetaArgs:
            return k8s.meta.v1.ObjectMetaArgs(name=object_name, namespace=gke.namespace, labels=dict(labels), **extra)

        def exact(cpu: str, memory: str) -> k8s.core.v1.ResourceRequirementsArgs:
            return k8s.core.v1.ResourceRequirementsArgs(
                requests={"cpu": cpu, "memory": memory}, limits={"cpu": cpu, "memory": memory}
            )

        def pod_spec(containers, **extra) -> k8s.core.v1.PodSpecArgs:
            return k8s.core.v1.PodSpecArgs(
                automount_service_account_token=False,
                node_selector=team_node_selector(args.team),
                tolerations=team_tolerations(args.team),
                containers=containers,
                security_context=k8s.core.v1.PodSecurityContextArgs(
                    run_as_non_root=True,
                    run_as_user=1000,
                    fs_group=1000,
                    seccomp_profile=k8s.core.v1.SeccompProfileArgs(type="RuntimeDefault"),
                ),
                **extra,
            )

        locked_down = k8s.core.v1.SecurityContextArgs(
            allow_privilege_escalation=False, capabilities=k8s.core.v1.CapabilitiesArgs(drop=["ALL"])
        )
        selector = {"app.kubernetes.io/component": kafka_name}
        service = k8s.core.v1.Service(
            f"{name}-kafka-service",
            metadata=meta(kafka_name, kafka_labels),
            spec=k8s.core.v1.ServiceSpecArgs(
                cluster_ip="None",
                publish_not_ready_addresses=True,
                selector=selector,
                ports=[
                    k8s.core.v1.ServicePortArgs(name="kafka", port=KAFKA_PORT),
                    k8s.core.v1.ServicePortArgs(name="controller", port=KAFKA_CONTROLLER_PORT),
                ],
            ),
            opts=child_opts(self),
        )
        domain = pulumi.Output.all(service.metadata.name, gke.namespace).apply(
            lambda v: f"{v[0]}.{v[1]}.svc.cluster.local"
        )
        hosts = domain.apply(lambda d: [f"{kafka_name}-{i}.{d}" for i in range(args.brokers)])
        bootstrap = hosts.apply(lambda hs: ",".join(f"{h}:{KAFKA_PORT}" for h in hs))
        voters = hosts.apply(lambda hs: ",".join(f"{i}@{h}:{KAFKA_CONTROLLER_PORT}" for i, h in enumerate(hs)))
        env = {
            "CLUSTER_ID": kraft_cluster_id(args.team, args.source_alias),
            "KAFKA_PROCESS_ROLES": "broker,controller",
            "KAFKA_CONTROLLER_QUORUM_VOTERS": voters,
            "KAFKA_LISTENERS": f"PLAINTEXT://:{KAFKA_PORT},CONTROLLER://:{KAFKA_CONTROLLER_PORT}",
            "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "KAFKA_CONTROLLER_LISTENER_NAMES": "CONTROLLER",
            "KAFKA_INTER_BROKER_LISTENER_NAME": "PLAINTEXT",
            "KAFKA_LOG_DIRS": "/var/lib/kafka/data",
            "KAFKA_DEFAULT_REPLICATION_FACTOR": str(rf),
            "KAFKA_MIN_INSYNC_REPLICAS": str(min(2, rf)),
            "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": str(rf),
            "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": str(rf),
            "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR": str(min(2, rf)),
            "KAFKA_AUTO_CREATE_TOPICS_ENABLE": "false",
        }
        start = domain.apply(
            lambda d: (
                "export KAFKA_NODE_ID=${HOSTNAME##*-}; "
                f"export KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://${{HOSTNAME}}.{d}:{KAFKA_PORT}; "
                "exec /etc/kafka/docker/run"
            )
        )
        k8s.apps.v1.StatefulSet(
            f"{name}-kafka",
            metadata=meta(kafka_name, kafka_labels),
            spec=k8s.apps.v1.StatefulSetSpecArgs(
                service_name=service.metadata.name,
                replicas=args.brokers,
                pod_management_policy="Parallel",
                selector=k8s.meta.v1.LabelSelectorArgs(match_labels=selector),
                template=k8s.core.v1.PodTemplateSpecArgs(
                    metadata=k8s.meta.v1.ObjectMetaArgs(labels=kafka_labels),
                    spec=pod_spec(
                        [
                            k8s.core.v1.ContainerArgs(
                                name="kafka",
                                image=KAFKA_IMAGE,
                                security_context=locked_down,
                                command=["/bin/bash", "-c"],
                                args=[start],
                                env=[k8s.core.v1.EnvVarArgs(name=k, value=v) for k, v in env.items()],
                                ports=[
                                    k8s.core.v1.ContainerPortArgs(name="kafka", container_port=KAFKA_PORT),
                                    k8s.core.v1.ContainerPortArgs(
                                        name="controller", container_port=KAFKA_CONTROLLER_PORT
                                    ),
                                ],
                                readiness_probe=k8s.core.v1.ProbeArgs(
                                    tcp_socket=k8s.core.v1.TCPSocketActionArgs(port=KAFKA_PORT), period_seconds=10
                                ),
                                volume_mounts=[
                                    k8s.core.v1.VolumeMountArgs(name="data", mount_path="/var/lib/kafka/data")
                                ],
                                resources=exact(BROKER_CPU, BROKER_MEMORY),
                            )
                        ]
                    ),
                ),
                volume_claim_templates=[
                    k8s.core.v1.PersistentVolumeClaimArgs(
                        metadata=k8s.meta.v1.ObjectMetaArgs(name="data", labels=kafka_labels),
                        spec=k8s.core.v1.PersistentVolumeClaimSpecArgs(
                            access_modes=["ReadWriteOnce"],
                            storage_class_name=gke.storage_class,
                            resources=k8s.core.v1.VolumeResourceRequirementsArgs(
                                requests={"storage": f"{args.disk_gb}Gi"}
                            ),
                        ),
                    )
                ],
            ),
            opts=child_opts(self),
        )

        self.mm2_properties = self._properties(args, bootstrap)
        config = k8s.core.v1.ConfigMap(
            f"{name}-mm2-config",
            metadata=meta(mm2_name, mm2_labels),
            data={MM2_CONFIG_KEY: self.mm2_properties},
            opts=child_opts(self),
        )
        mm2_selector = {"app.kubernetes.io/component": mm2_name}
        k8s.apps.v1.Deployment(
            f"{name}-mm2",
            metadata=meta(mm2_name, mm2_labels),
            spec=k8s.apps.v1.DeploymentSpecArgs(
                replicas=1,
                strategy=k8s.apps.v1.DeploymentStrategyArgs(type="Recreate"),
                selector=k8s.meta.v1.LabelSelectorArgs(match_labels=mm2_selector),
                template=k8s.core.v1.PodTemplateSpecArgs(
                    # a changed mm2.properties rolls the pod
                    metadata=k8s.meta.v1.ObjectMetaArgs(
                        labels=mm2_labels,
                        annotations={
                            "daggers.dev/config-sha": self.mm2_properties.apply(
                                lambda t: hashlib.sha256(t.encode()).hexdigest()[:16]
                            )
                        },
                    ),
                    spec=pod_spec(
                        [
                            k8s.core.v1.ContainerArgs(
                                name="mirror-maker",
                                image=KAFKA_IMAGE,
                                security_context=locked_down,
                                # --clusters local: only the connectors that write to the mirror run
                                command=[
                                    "/opt/kafka/bin/connect-mirror-maker.sh",
                                    f"/etc/mm2/{MM2_CONFIG_KEY}",
                                    "--clusters",
                                    LOCAL_ALIAS,
                                ],
                                volume_mounts=[
                                    k8s.core.v1.VolumeMountArgs(name="config", mount_path="/etc/mm2", read_only=True),
                                    k8s.core.v1.VolumeMountArgs(
                                        name="source-login", mount_path=SECRETS_DIR, read_only=True
                                    ),
                                ],
                                resources=exact(MM2_CPU, MM2_MEMORY),
                            )
                        ],
                        volumes=[
                            k8s.core.v1.VolumeArgs(
                                name="config",
                                config_map=k8s.core.v1.ConfigMapVolumeSourceArgs(name=config.metadata.name),
                            ),
                            # created out of band with the SCRAM user (see mm2_properties)
                            k8s.core.v1.VolumeArgs(
                                name="source-login",
                                secret=k8s.core.v1.SecretVolumeSourceArgs(
                                    secret_name=f"mm2-{args.source_alias}-credentials",
                                    items=[
                                        k8s.core.v1.KeyToPathArgs(
                                            key="sasl.properties", path=f"{args.source_alias}.properties"
                                        )
                                    ],
                                ),
                            ),
                        ],
                    ),
                ),
            ),
            opts=child_opts(self),
        )
        return bootstrap

    # -- vm --------------------------------------------------------------------------------------
    def _on_vms(self, name: str, args: KafkaMirrorArgs, vm: MirrorOnVms) -> pulumi.Output[str]:
        zones = pulumi.Output.from_input(vm.zones)
        instances = [
            private_instance(
                f"{name}-broker-{i}",
                parent=self,
                name=f"dagger-{args.team}-mirror-{args.source_alias}-{i}",
                project=vm.project,
                machine_type=MIRROR_MACHINE_TYPE,
                zone=zones.apply(lambda zs, i=i: zs[i % len(zs)]),
                subnetwork=vm.subnetwork,
                service_account_email=vm.service_account_email,
                tags=vm.network_tags,
                labels={**args.labels, "role": "kafka-mirror"},
                disk_gb=args.disk_gb,
            )
            for i in range(args.brokers)
        ]
        pairs = pulumi.Output.all(*[pulumi.Output.all(inst.name, internal_ip(inst)) for inst in instances])
        bootstrap = pairs.apply(lambda ps: ",".join(f"{ip}:{KAFKA_PORT}" for _, ip in ps))
        self.mm2_properties = self._properties(args, bootstrap)
        group = ansible_group(f"mirror_{args.source_alias}")

        def build(values: list) -> dict:
            ps, servers, properties = values
            ps = [tuple(p) for p in ps]
            voters = ",".join(f"{i}@{ip}:{KAFKA_CONTROLLER_PORT}" for i, (_, ip) in enumerate(ps))
            return inventory_of(
                {"kafka_mirror": ps, "mirror_maker": ps, group: ps},
                {
                    group: {
                        "kafka_mirror_source_alias": args.source_alias,
                        "kafka_mirror_cluster_id": kraft_cluster_id(args.team, args.source_alias),
                        "kafka_mirror_controller_quorum_voters": voters,
                        "kafka_mirror_bootstrap_servers": servers,
                        "kafka_mirror_replication_factor": args.replication_factor,
                        "mirror_maker_properties": properties,
                    }
                },
                {host: {"kafka_mirror_node_id": i} for i, (host, _) in enumerate(ps)},
            )

        self.inventory = pulumi.Output.all(pairs, bootstrap, self.mm2_properties).apply(build)
        return bootstrap
