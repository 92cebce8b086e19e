"""What the components share: type tokens, ports, label keys, image versions, inventory merging.

Nothing here creates a resource; each component module uses these so that names, labels and
ports are decided in one place (and the tests read the same constants they check against).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import pulumi
import pulumi_gcp as gcp

TYPE_PREFIX = "daggers:infra"

# The Kubernetes label (and node taint) that ties nodes and pods to one team.
TEAM_LABEL = "daggers.dev/team"

# Images: Spark matches pyproject's pyspark pin; Kafka matches jvm/kafka/pom.xml (broker and MM2).
SPARK_IMAGE = "apache/spark:4.0.0"
KAFKA_IMAGE = "apache/kafka:4.3.1"
VM_IMAGE = "debian-cloud/debian-12"

# Spark standalone: master RPC and UI, worker RPC and UI, the driver and block manager (fixed so
# that firewalls can name them: daggers set spark.driver.port and spark.blockManager.port to these,
# and Spark's retries, spark.port.maxRetries <= 16, stay below SPARK_RPC_LAST_PORT), application UIs.
SPARK_MASTER_PORT = 7077
SPARK_MASTER_UI_PORT = 8080
SPARK_WORKER_PORT = 7078
SPARK_WORKER_UI_PORT = 8081
SPARK_DRIVER_PORT = 7079
SPARK_BLOCK_MANAGER_PORT = 7080
SPARK_RPC_LAST_PORT = 7099
SPARK_APP_UI_PORTS = "4040-4049"
KAFKA_PORT = 9092
KAFKA_CONTROLLER_PORT = 9093

# What a team's machines accept from the team's own range, and nothing else (TeamNetwork).
SPARK_PORTS: tuple[str, ...] = (
    f"{SPARK_MASTER_PORT}-{SPARK_RPC_LAST_PORT}",
    f"{SPARK_MASTER_UI_PORT}-{SPARK_WORKER_UI_PORT}",
    SPARK_APP_UI_PORTS,
)
KAFKA_PORTS: tuple[str, ...] = (f"{KAFKA_PORT}-{KAFKA_CONTROLLER_PORT}",)
SSH_PORT = "22"  # vm flavour only: Ansible, from a runner inside the team's range


def component_type(name: str) -> str:
    return f"{TYPE_PREFIX}:{name}"


def child_opts(parent: pulumi.Resource, **kwargs: Any) -> pulumi.ResourceOptions:
    """Options for a component's child: parented (so providers and URNs follow the component)."""
    return pulumi.ResourceOptions(parent=parent, **kwargs)


def slug(text: str) -> str:
    """A lowercase, dash-separated form of text, for logical and Kubernetes names."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def ansible_group(text: str) -> str:
    """Ansible group names take letters, digits and underscores only."""
    return re.sub(r"[^a-zA-Z0-9_]", "_", text)


def k8s_labels(labels: Mapping[str, str], team: str, component: str | None = None) -> dict[str, str]:
    """The team's labels for Kubernetes objects, with the team label and, for workloads, the component."""
    out = {**labels, TEAM_LABEL: team, "app.kubernetes.io/managed-by": "pulumi", "app.kubernetes.io/part-of": "daggers"}
    if component:
        out["app.kubernetes.io/component"] = component
    return out


def team_tolerations(team: str) -> list[dict[str, str]]:
    """Pods of a team tolerate the taint on the team's node pool (and nobody else's)."""
    return [{"key": TEAM_LABEL, "operator": "Equal", "value": team, "effect": "NoSchedule"}]


def team_node_selector(team: str) -> dict[str, str]:
    return {TEAM_LABEL: team}


def empty_inventory() -> dict[str, Any]:
    return {"all": {"children": []}, "_meta": {"hostvars": {}}}


def merge_inventories(*inventories: Mapping[str, Any] | None) -> dict[str, Any]:
    """Merge Ansible dynamic inventories (groups' hosts, vars and children; _meta.hostvars).

    Two inventories may share a group (their hosts are joined) but must not set one variable to
    two values: that raises, because the roles would see whichever came last.
    """
    merged = empty_inventory()
    for inventory in inventories:
        if not inventory:
            continue
        for group, body in inventory.items():
            if group == "_meta":
                for host, hostvars in body.get("hostvars", {}).items():
                    _merge_vars(merged["_meta"]["hostvars"].setdefault(host, {}), hostvars, f"host {host}")
                continue
            target = merged.setdefault(group, {})
            for key in ("hosts", "children"):
                for item in body.get(key, []):
                    if item not in target.setdefault(key, []):
                        target[key].append(item)
            if body.get("vars"):
                _merge_vars(target.setdefault("vars", {}), body["vars"], f"group {group}")
    return merged


def _merge_vars(into: dict[str, Any], new: Mapping[str, Any], where: str) -> None:
    for key, value in new.items():
        if key in into and into[key] != value:
            raise ValueError(f"inventory {where}: {key} set to both {into[key]!r} and {value!r}")
        into[key] = value


def inventory_of(
    groups: Mapping[str, Sequence[tuple[str, str]]],
    group_vars: Mapping[str, Mapping[str, Any]],
    host_vars: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """An inventory from {group: [(host, internal ip)]}: every host gets ansible_host = its internal IP."""
    inventory = empty_inventory()
    for group, hosts in groups.items():
        inventory["all"]["children"].append(group)
        inventory[group] = {"hosts": [h for h, _ in hosts], "vars": dict(group_vars.get(group, {}))}
        for host, ip in hosts:
            hv = inventory["_meta"]["hostvars"].setdefault(host, {})
            hv.update({"ansible_host": ip, "internal_ip": ip, **(host_vars or {}).get(host, {})})
    return inventory


def private_instance(
    logical_name: str,
    *,
    parent: pulumi.Resource,
    name: str,
    project: str,
    machine_type: str,
    zone: pulumi.Input[str],
    subnetwork: pulumi.Input[str],
    service_account_email: pulumi.Input[str],
    tags: Sequence[str],
    labels: Mapping[str, str],
    disk_gb: int = 100,
) -> gcp.compute.Instance:
    """A team's Compute Engine instance: no external IP (no access config), the team's account,
    tags and labels, OS Login only, Shielded VM. Its software comes from the Ansible roles."""
    return gcp.compute.Instance(
        logical_name,
        name=name,
        project=project,
        machine_type=machine_type,
        zone=zone,
        boot_disk=gcp.compute.InstanceBootDiskArgs(
            initialize_params=gcp.compute.InstanceBootDiskInitializeParamsArgs(
                image=VM_IMAGE, size=disk_gb, type="pd-balanced", labels=dict(labels)
            )
        ),
        network_interfaces=[gcp.compute.InstanceNetworkInterfaceArgs(subnetwork=subnetwork)],
        service_account=gcp.compute.InstanceServiceAccountArgs(
            email=service_account_email, scopes=["https://www.googleapis.com/auth/cloud-platform"]
        ),
        tags=list(tags),
        labels=dict(labels),
        metadata={"enable-oslogin": "TRUE", "block-project-ssh-keys": "TRUE"},
        shielded_instance_config=gcp.compute.InstanceShieldedInstanceConfigArgs(
            enable_secure_boot=True, enable_vtpm=True, enable_integrity_monitoring=True
        ),
        allow_stopping_for_update=True,
        opts=child_opts(parent),
    )


def internal_ip(instance: gcp.compute.Instance) -> pulumi.Output[str]:
    return instance.network_interfaces.apply(lambda nics: nics[0].network_ip)
