"""SparkCluster: a team's Spark standalone cluster, in one of two flavours.

gke: a node pool of the team's own (tainted and labelled `daggers.dev/team=<team>`, its nodes
run as the team's service account, its pods take their IPs from the team's range), and in the
team's namespace a master (Deployment + Service) and workers (a Deployment, one per node),
which tolerate the taint and select the pool. Pods run as the team's Kubernetes service account
(Workload Identity), with requests equal to limits sized to fit one node.

vm: Compute Engine instances (a master and the workers) in the team's subnetwork: no external
IP, the team's service account, the team's network tag and labels. Ansible installs their
software (playbooks/), reading `inventory`: Ansible's dynamic-inventory JSON with the groups
spark_master and spark_workers, each host's `ansible_host` its internal IP.

Both run Spark's own authentication (infra/spark_auth.py, as the lab's role does): on gke the
cluster's RPC secret and UI key are generated once (pulumi_random's RandomPassword), written with the other
settings into a spark-defaults.conf held by a Kubernetes Secret in the team's namespace, mounted
read-only into the master and worker pods (which run as the image's unprivileged user, 185) and
passed with --properties-file; outputs `auth_secret` and `ui_key` (secret) are what the deploy
tooling's cluster file points at. On vm the Ansible role writes the same settings (spark_auth,
true by default, which the cloud inventory cannot set) and generates the secrets on the controller.

Output `master_url`: spark://host:7077.
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s
import pulumi_random as random

from .. import spark_auth
from .common import (
    SPARK_IMAGE,
    SPARK_MASTER_PORT,
    SPARK_MASTER_UI_PORT,
    SPARK_WORKER_PORT,
    SPARK_WORKER_UI_PORT,
    TEAM_LABEL,
    child_opts,
    component_type,
    internal_ip,
    inventory_of,
    k8s_labels,
    private_instance,
    team_node_selector,
    team_tolerations,
)

MASTER_MACHINE_TYPE = "e2-standard-4"
MASTER_CPU_M = 1000
MASTER_MEMORY_MI = 2048
# what GKE's own daemonsets (logging, metadata server, dataplane) take on each node
DAEMONSET_CPU_M = 400
DAEMONSET_MEMORY_MI = 1024
# the worker daemon and JVM overheads, kept out of what the worker offers executors
WORKER_OVERHEAD_MI = 1536
MAX_PODS_PER_NODE = 32
# GKE gives each node a pod range of twice its max pods, rounded up to a power of two
POD_RANGE_PER_NODE = 2 ** math.ceil(math.log2(MAX_PODS_PER_NODE * 2))
SPARE_NODES = 1  # a node for the master and the team's Kafka mirrors
SCOPES = ["https://www.googleapis.com/auth/cloud-platform"]
# the apache/spark image's own user (and group): the pods run as it, never as root
SPARK_UID = 185
SPARK_CONF_DIR = "/etc/spark-auth"
SPARK_CONF_PATH = f"{SPARK_CONF_DIR}/{spark_auth.CONF_FILE}"
# owner read only; fsGroup gives the file to the Spark group (kubelet adds group read), so uid 185 reads it
CONF_FILE_MODE = 0o400


def gke_allocatable(cores: int, memory_gb: int) -> tuple[int, int]:
    """A GKE node's allocatable (millicores, MiB), after GKE's documented reservations."""
    cpu_reserved = (
        0.06 * min(cores, 1)
        + 0.01 * min(max(cores - 1, 0), 1)
        + 0.005 * min(max(cores - 2, 0), 2)
        + 0.0025 * max(cores - 4, 0)
    )
    mem_reserved, lower = 0.0, 0.0
    for upto, share in ((4, 0.25), (8, 0.20), (16, 0.10), (128, 0.06), (math.inf, 0.02)):
        mem_reserved += max(0.0, min(memory_gb, upto) - lower) * share
        lower = upto
    eviction_mi = 100
    return int(cores * 1000 - cpu_reserved * 1000), int((memory_gb - mem_reserved) * 1024 - eviction_mi)


def worker_pod_resources(cores: int, memory_gb: int) -> tuple[str, str, str]:
    """(cpu, memory, SPARK_WORKER_MEMORY) for a worker pod that fills one node of that shape."""
    cpu_m, mem_mi = gke_allocatable(cores, memory_gb)
    cpu_m -= DAEMONSET_CPU_M
    mem_mi -= DAEMONSET_MEMORY_MI
    return f"{cpu_m}m", f"{mem_mi}Mi", f"{mem_mi - WORKER_OVERHEAD_MI}m"


class PlacementError(ValueError):
    """The cluster asked for does not fit where it is to be placed."""


@dataclass(frozen=True)
class GkePlacement:
    cluster: pulumi.Input[str]  # the platform's GKE cluster (id)
    location: pulumi.Input[str]
    namespace: pulumi.Input[str]
    service_account_name: pulumi.Input[str]  # the team's Kubernetes SA (Workload Identity)
    pod_range: ipaddress.IPv4Network  # the team's range: its node pool's pod IPs
    network_tag: str


@dataclass(frozen=True)
class VmPlacement:
    zones: pulumi.Input[Sequence[str]]  # instances are spread over these, round robin
    subnetwork: pulumi.Input[str]
    network_tags: Sequence[str]


@dataclass(frozen=True)
class SparkClusterArgs:
    team: str
    project: str
    workers: int
    worker_cores: int
    worker_memory_gb: int
    machine_type: str
    service_account_email: pulumi.Input[str]
    labels: Mapping[str, str] = field(default_factory=dict)
    gke: GkePlacement | None = None
    vm: VmPlacement | None = None
    image: str = SPARK_IMAGE
    k8s_name: str = "spark"  # Kubernetes objects: <k8s_name>-master, <k8s_name>-worker

    def __post_init__(self) -> None:
        if (self.gke is None) == (self.vm is None):
            raise ValueError("SparkClusterArgs: give exactly one of gke= or vm=")


class SparkCluster(pulumi.ComponentResource):
    master_url: pulumi.Output[str]
    inventory: pulumi.Output[dict] | None  # vm flavour only
    auth_secret: pulumi.Output[str] | None  # gke flavour only (on vm the role generates them)
    ui_key: pulumi.Output[str] | None

    def __init__(self, name: str, args: SparkClusterArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(component_type("SparkCluster"), name, None, opts)
        self.inventory = self.auth_secret = self.ui_key = None
        if args.gke is not None:
            self.master_url = self._on_gke(name, args, args.gke)
        else:
            self.master_url, self.inventory = self._on_vms(name, args, args.vm)
        self.register_outputs(
            {
                "master_url": self.master_url,
                "inventory": self.inventory,
                "auth_secret": self.auth_secret,
                "ui_key": self.ui_key,
            }
        )

    # -- gke -------------------------------------------------------------------------------------
    def _on_gke(self, name: str, args: SparkClusterArgs, gke: GkePlacement) -> pulumi.Output[str]:
        nodes = args.workers + SPARE_NODES
        if (nodes + 1) * POD_RANGE_PER_NODE > gke.pod_range.num_addresses:
            raise PlacementError(
                f"team {args.team}: its range {gke.pod_range} holds the pod ranges of "
                f"{gke.pod_range.num_addresses // POD_RANGE_PER_NODE} nodes "
                f"(a /{32 - int(math.log2(POD_RANGE_PER_NODE))} each); its node pool grows to {nodes + 1}: "
                f"ask for a larger network.cidr or fewer workers"
            )
        pool = gcp.container.NodePool(
            f"{name}-pool",
            name=f"dagger-{args.team}",
            project=args.project,
            cluster=gke.cluster,
            location=gke.location,
            initial_node_count=1,
            max_pods_per_node=MAX_PODS_PER_NODE,
            autoscaling=gcp.container.NodePoolAutoscalingArgs(
                total_min_node_count=nodes, total_max_node_count=nodes + 1, location_policy="BALANCED"
            ),
            management=gcp.container.NodePoolManagementArgs(auto_repair=True, auto_upgrade=True),
            upgrade_settings=gcp.container.NodePoolUpgradeSettingsArgs(max_surge=1, max_unavailable=0),
            network_config=gcp.container.NodePoolNetworkConfigArgs(
                create_pod_range=True,
                pod_range=f"dagger-{args.team}-pods",
                pod_ipv4_cidr_block=str(gke.pod_range),
                enable_private_nodes=True,
            ),
            node_config=gcp.container.NodePoolNodeConfigArgs(
                machine_type=args.machine_type,
                service_account=args.service_account_email,
                oauth_scopes=SCOPES,
                labels={TEAM_LABEL: args.team},
                resource_labels=dict(args.labels),
                tags=[gke.network_tag],
                taints=[
                    gcp.container.NodePoolNodeConfigTaintArgs(key=TEAM_LABEL, value=args.team, effect="NO_SCHEDULE")
                ],
                workload_metadata_config=gcp.container.NodePoolNodeConfigWorkloadMetadataConfigArgs(
                    mode="GKE_METADATA"
                ),
                shielded_instance_config=gcp.container.NodePoolNodeConfigShieldedInstanceConfigArgs(
                    enable_secure_boot=True, enable_integrity_monitoring=True
                ),
            ),
            opts=child_opts(self),
        )

        master_name, worker_name = f"{args.k8s_name}-master", f"{args.k8s_name}-worker"
        master_labels = k8s_labels(args.labels, args.team, master_name)
        worker_labels = k8s_labels(args.labels, args.team, worker_name)
        selector = {"app.kubernetes.io/component": master_name, TEAM_LABEL: args.team}
        worker_selector = {"app.kubernetes.io/component": worker_name, TEAM_LABEL: args.team}
        # the workloads wait for their nodes: the pool is a dependency, not just a label
        on_pool = child_opts(self, depends_on=[pool])

        def meta(object_name: str, labels: Mapping[str, str]) -> k8s.meta.v1.ObjectMetaArgs:
            return k8s.meta.v1.ObjectMetaArgs(name=object_name, namespace=gke.namespace, labels=dict(labels))

        conf = self._auth_conf(name, meta(f"{args.k8s_name}-defaults", k8s_labels(args.labels, args.team)))
        conf_volume = k8s.core.v1.VolumeArgs(
            name="spark-defaults",
            secret=k8s.core.v1.SecretVolumeSourceArgs(
                secret_name=conf.metadata.name,
                default_mode=CONF_FILE_MODE,
                items=[k8s.core.v1.KeyToPathArgs(key=spark_auth.CONF_FILE, path=spark_auth.CONF_FILE)],
            ),
        )
        conf_mount = k8s.core.v1.VolumeMountArgs(name="spark-defaults", mount_path=SPARK_CONF_DIR, read_only=True)

        def pod(
            labels: Mapping[str, str],
            container: k8s.core.v1.ContainerArgs,
            affinity: k8s.core.v1.AffinityArgs | None = None,
        ) -> k8s.core.v1.PodTemplateSpecArgs:
            return k8s.core.v1.PodTemplateSpecArgs(
                metadata=k8s.meta.v1.ObjectMetaArgs(labels=dict(labels)),
                spec=k8s.core.v1.PodSpecArgs(
                    service_account_name=gke.service_account_name,
                    automount_service_account_token=False,
                    node_selector=team_node_selector(args.team),
                    tolerations=team_tolerations(args.team),
                    affinity=affinity,
                    containers=[container],
                    volumes=[conf_volume],
                    security_context=k8s.core.v1.PodSecurityContextArgs(
                        run_as_non_root=True,
                        run_as_user=SPARK_UID,
                        run_as_group=SPARK_UID,
                        fs_group=SPARK_UID,
                        seccomp_profile=k8s.core.v1.SeccompProfileArgs(type="RuntimeDefault"),
                    ),
                ),
            )

        def resources(cpu: str, memory: str) -> k8s.core.v1.ResourceRequirementsArgs:
            exact = {"cpu": cpu, "memory": memory}
            return k8s.core.v1.ResourceRequirementsArgs(requests=exact, limits=exact)

        locked_down = k8s.core.v1.SecurityContextArgs(
            allow_privilege_escalation=False, capabilities=k8s.core.v1.CapabilitiesArgs(drop=["ALL"])
        )

        k8s.apps.v1.Deployment(
            f"{name}-master",
            metadata=meta(master_name, master_labels),
            spec=k8s.apps.v1.DeploymentSpecArgs(
                replicas=1,
                strategy=k8s.apps.v1.DeploymentStrategyArgs(type="Recreate"),
                selector=k8s.meta.v1.LabelSelectorArgs(match_labels=selector),
                template=pod(
                    master_labels,
                    k8s.core.v1.ContainerArgs(
                        name="master",
                        image=args.image,
                        security_context=locked_down,
                        command=["/opt/spark/bin/spark-class", "org.apache.spark.deploy.master.Master"],
                        args=[
                            "--port",
                            str(SPARK_MASTER_PORT),
                            "--webui-port",
                            str(SPARK_MASTER_UI_PORT),
                            "--properties-file",
                            SPARK_CONF_PATH,
                        ],
                        volume_mounts=[conf_mount],
                        ports=[
                            k8s.core.v1.ContainerPortArgs(name="spark", container_port=SPARK_MASTER_PORT),
                            k8s.core.v1.ContainerPortArgs(name="ui", container_port=SPARK_MASTER_UI_PORT),
                        ],
                        # TCP: an HTTP probe of the UI would get 403 behind the JWSFilter
                        readiness_probe=k8s.core.v1.ProbeArgs(
                            tcp_socket=k8s.core.v1.TCPSocketActionArgs(port=SPARK_MASTER_PORT), period_seconds=10
                        ),
                        resources=resources(f"{MASTER_CPU_M}m", f"{MASTER_MEMORY_MI}Mi"),
                    ),
                ),
            ),
            opts=on_pool,
        )
        service = k8s.core.v1.Service(
            f"{name}-master-service",
            metadata=meta(master_name, master_labels),
            spec=k8s.core.v1.ServiceSpecArgs(
                selector=selector,
                ports=[
                    k8s.core.v1.ServicePortArgs(name="spark", port=SPARK_MASTER_PORT, target_port=SPARK_MASTER_PORT),
                    k8s.core.v1.ServicePortArgs(name="ui", port=SPARK_MASTER_UI_PORT, target_port=SPARK_MASTER_UI_PORT),
                ],
            ),
            opts=child_opts(self),
        )
        master_url = pulumi.Output.all(service.metadata.name, gke.namespace).apply(
            lambda v: f"spark://{v[0]}.{v[1]}.svc.cluster.local:{SPARK_MASTER_PORT}"
        )

        cpu, memory, spark_memory = worker_pod_resources(args.worker_cores, args.worker_memory_gb)
        one_per_node = k8s.core.v1.AffinityArgs(
            pod_anti_affinity=k8s.core.v1.PodAntiAffinityArgs(
                required_during_scheduling_ignored_during_execution=[
                    k8s.core.v1.PodAffinityTermArgs(
                        topology_key="kubernetes.io/hostname",
                        label_selector=k8s.meta.v1.LabelSelectorArgs(match_labels=worker_selector),
                    )
                ]
            )
        )
        k8s.apps.v1.Deployment(
            f"{name}-workers",
            metadata=meta(worker_name, worker_labels),
            spec=k8s.apps.v1.DeploymentSpecArgs(
                replicas=args.workers,
                # no surge: a rollout must not ask the quota for more than the spec's workers
                strategy=k8s.apps.v1.DeploymentStrategyArgs(
                    type="RollingUpdate",
                    rolling_update=k8s.apps.v1.RollingUpdateDeploymentArgs(max_surge=0, max_unavailable=1),
                ),
                selector=k8s.meta.v1.LabelSelectorArgs(match_labels=worker_selector),
                template=pod(
                    worker_labels,
                    k8s.core.v1.ContainerArgs(
                        name="worker",
                        image=args.image,
                        security_context=locked_down,
                        command=["/opt/spark/bin/spark-class", "org.apache.spark.deploy.worker.Worker"],
                        args=master_url.apply(
                            lambda url: [
                                url,
                                "--cores",
                                str(args.worker_cores),
                                "--memory",
                                spark_memory,
                                "--port",
                                str(SPARK_WORKER_PORT),
                                "--webui-port",
                                str(SPARK_WORKER_UI_PORT),
                                "--properties-file",
                                SPARK_CONF_PATH,
                            ]
                        ),
                        volume_mounts=[conf_mount],
                        ports=[
                            k8s.core.v1.ContainerPortArgs(name="worker", container_port=SPARK_WORKER_PORT),
                            k8s.core.v1.ContainerPortArgs(name="ui", container_port=SPARK_WORKER_UI_PORT),
                        ],
                        readiness_probe=k8s.core.v1.ProbeArgs(
                            tcp_socket=k8s.core.v1.TCPSocketActionArgs(port=SPARK_WORKER_PORT), period_seconds=10
                        ),
                        resources=resources(cpu, memory),
                    ),
                    affinity=one_per_node,
                ),
            ),
            opts=on_pool,
        )
        return master_url

    def _auth_conf(self, name: str, metadata: k8s.meta.v1.ObjectMetaArgs) -> k8s.core.v1.Secret:
        """The cluster's secrets, made once, and its spark-defaults.conf in a Secret of the team's namespace."""
        # letters and digits only: nothing a properties file or a shell would escape
        secret = random.RandomPassword(
            f"{name}-auth-secret", length=spark_auth.SECRET_LENGTH, special=False, opts=child_opts(self)
        )
        key = random.RandomPassword(
            f"{name}-ui-key", length=spark_auth.UI_KEY_LENGTH, special=False, opts=child_opts(self)
        )
        # secret in the program too (the mocks do not apply the provider's additional_secret_outputs)
        self.auth_secret, self.ui_key = pulumi.Output.secret(secret.result), pulumi.Output.secret(key.result)
        conf = pulumi.Output.secret(
            pulumi.Output.all(self.auth_secret, self.ui_key).apply(lambda v: spark_auth.spark_defaults_conf(v[0], v[1]))
        )
        return k8s.core.v1.Secret(
            f"{name}-defaults",
            metadata=metadata,
            type="Opaque",
            string_data={spark_auth.CONF_FILE: conf},
            opts=child_opts(self),
        )

    # -- vm --------------------------------------------------------------------------------------
    def _on_vms(self, name: str, args: SparkClusterArgs, vm: VmPlacement):
        zones = pulumi.Output.from_input(vm.zones)

        def instance(logical: str, instance_name: str, machine_type: str, index: int, role: str):
            return private_instance(
                logical,
                parent=self,
                name=instance_name,
                project=args.project,
                machine_type=machine_type,
                zone=zones.apply(lambda zs: zs[index % len(zs)]),
                subnetwork=vm.subnetwork,
                service_account_email=args.service_account_email,
                tags=vm.network_tags,
                labels={**args.labels, "role": role},
            )

        prefix = f"dagger-{args.team}-{args.k8s_name}"
        master = instance(f"{name}-master", f"{prefix}-master", MASTER_MACHINE_TYPE, 0, "spark-master")
        workers = [
            instance(f"{name}-worker-{i}", f"{prefix}-worker-{i}", args.machine_type, i + 1, "spark-worker")
            for i in range(args.workers)
        ]

        hosts = pulumi.Output.all(*[pulumi.Output.all(i.name, internal_ip(i)) for i in [master, *workers]])
        master_url = internal_ip(master).apply(lambda addr: f"spark://{addr}:{SPARK_MASTER_PORT}")

        def build(values: list) -> dict:
            (url, pairs) = values
            pairs = [tuple(p) for p in pairs]
            return inventory_of(
                {"spark_master": pairs[:1], "spark_workers": pairs[1:]},
                {
                    "spark_master": {
                        "spark_master_port": SPARK_MASTER_PORT,
                        "spark_master_ui_port": SPARK_MASTER_UI_PORT,
                    },
                    "spark_workers": {
                        "spark_master_url": url,
                        "spark_worker_cores": args.worker_cores,
                        "spark_worker_memory_gb": args.worker_memory_gb,
                        "spark_worker_port": SPARK_WORKER_PORT,
                        "spark_worker_ui_port": SPARK_WORKER_UI_PORT,
                    },
                },
            )

        inventory = pulumi.Output.all(master_url, hosts).apply(build)
        return master_url, inventory
