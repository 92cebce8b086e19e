"""Will the cluster a spec asks for run? Pure checks with the numbers the components use.

Each check returns (field, message) pairs; infra/spec.py adds the file and line. Every refusal
says what would fit. The worker pod's shape comes from infra/components/spark.py's own functions
(worker_pod_resources, gke_allocatable), so the check and the Deployment cannot disagree.

Also here: the GCP regions and machine types a spec may name (allow-lists, with "did you mean"),
and the executor cores a team's peak rate needs, from the rate `make bench` measured on the lab's
Spark cluster (infra/throughput.json).
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from dagger_runtime.suggest import closest

from .components.spark import (
    DAEMONSET_CPU_M,
    DAEMONSET_MEMORY_MI,
    MASTER_CPU_M,
    MASTER_MEMORY_MI,
    SPARE_NODES,
    WORKER_OVERHEAD_MI,
    gke_allocatable,
    worker_pod_resources,
)
from .tiers import CEILINGS, MIRROR_BROKER_CPU, MIRROR_BROKER_MEMORY_GB, MIRROR_MM2_CPU, MIRROR_MM2_MEMORY_GB

# Spark refuses an executor under 450 MiB (1.5 x its 300 MiB reserve); a worker that cannot offer
# executors a GiB is a worker no dagger can use.
MIN_EXECUTOR_MEMORY_MI = 1024

# GCP regions (cloud.google.com/about/locations, 2025). A region not here is a typo or too new:
# add it when GCP opens it.
REGIONS = frozenset(
    """
africa-south1 asia-east1 asia-east2 asia-northeast1 asia-northeast2 asia-northeast3 asia-south1 asia-south2
asia-southeast1 asia-southeast2 australia-southeast1 australia-southeast2 europe-central2 europe-north1
europe-north2 europe-southwest1 europe-west1 europe-west2 europe-west3 europe-west4 europe-west6 europe-west8
europe-west9 europe-west10 europe-west12 me-central1 me-central2 me-west1 northamerica-northeast1
northamerica-northeast2 northamerica-south1 southamerica-east1 southamerica-west1 us-central1 us-east1
us-east4 us-east5 us-south1 us-west1 us-west2 us-west3 us-west4
""".split()
)


def _series(prefix: str, sizes: Iterable[int], gb_per_vcpu: float) -> dict[str, tuple[int, float]]:
    return {f"{prefix}-{n}": (n, n * gb_per_vcpu) for n in sizes}


# Predefined machine types with dedicated vCPUs: name -> (vCPUs, memory GB). Shared-core types
# (e2-micro/small/medium) are left out on purpose: a Spark worker or a broker needs whole cores.
MACHINE_TYPES: dict[str, tuple[int, float]] = {
    **_series("e2-standard", (2, 4, 8, 16, 32), 4),
    **_series("e2-highmem", (2, 4, 8, 16), 8),
    **_series("e2-highcpu", (2, 4, 8, 16, 32), 1),
    **_series("n1-standard", (1, 2, 4, 8, 16, 32, 64, 96), 3.75),
    **_series("n1-highmem", (2, 4, 8, 16, 32, 64, 96), 6.5),
    **_series("n2-standard", (2, 4, 8, 16, 32, 48, 64, 80, 96, 128), 4),
    **_series("n2-highmem", (2, 4, 8, 16, 32, 48, 64, 80, 96, 128), 8),
    **_series("n2-highcpu", (2, 4, 8, 16, 32, 48, 64, 80, 96), 1),
    **_series("n2d-standard", (2, 4, 8, 16, 32, 48, 64, 80, 96, 128, 224), 4),
    **_series("n2d-highmem", (2, 4, 8, 16, 32, 48, 64, 80, 96), 8),
    **_series("c2-standard", (4, 8, 16, 30, 60), 4),
    **_series("c2d-standard", (2, 4, 8, 16, 32, 56, 112), 4),
    **_series("c3-standard", (4, 8, 22, 44, 88, 176), 4),
    **_series("c3-highmem", (4, 8, 22, 44, 88, 176), 8),
    **_series("t2d-standard", (1, 2, 4, 8, 16, 32, 48, 60), 4),
}


def did_you_mean(value: str, choices: Iterable[str]) -> str:
    close = closest(value, choices)
    return f" (did you mean {' or '.join(close)}?)" if close else ""


def region_problem(region: str) -> str | None:
    if region in REGIONS:
        return None
    close = did_you_mean(region, REGIONS)
    return f"{region!a} is not a GCP region" + (close or f"; the regions: {', '.join(sorted(REGIONS))}")


def machine_problem(machine_type: str) -> str | None:
    if machine_type in MACHINE_TYPES:
        return None
    families = sorted({name.rsplit("-", 1)[0] for name in MACHINE_TYPES})
    return (
        f"{machine_type!a} is not a machine type the platform knows{did_you_mean(machine_type, MACHINE_TYPES)} "
        f"(families: {', '.join(families)}; shared-core types cannot hold a Spark worker)"
    )


def _millis(quantity: str) -> int:
    """'3520m' -> 3520, '12597Mi' -> 12597 (the strings worker_pod_resources returns)."""
    return int(quantity.removesuffix("Mi").removesuffix("m"))


def worker_pod(cores: int, memory_gb: int) -> tuple[int, int, int]:
    """(millicores, MiB, MiB offered to executors) of a gke worker pod: infra/components/spark.py's numbers."""
    cpu, memory, spark_memory = worker_pod_resources(cores, memory_gb)
    return _millis(cpu), _millis(memory), _millis(spark_memory)


def node_room(machine_type: str) -> tuple[int, int]:
    """(millicores, MiB) a node of that type has for the team's pods: allocatable less GKE's daemonsets."""
    vcpus, memory_gb = MACHINE_TYPES[machine_type]
    cpu_m, mem_mi = gke_allocatable(vcpus, memory_gb)
    return cpu_m - DAEMONSET_CPU_M, mem_mi - DAEMONSET_MEMORY_MI


def smallest_worker_memory_gb(cores: int) -> int:
    for gb in range(1, 1025):
        if worker_pod(cores, gb)[2] >= MIN_EXECUTOR_MEMORY_MI:
            return gb
    raise AssertionError("unreachable")  # pragma: no cover


def machines_that_fit(cpu_m: int, mem_mi: int, *, count: int = 3) -> list[str]:
    """The smallest machine types (by vCPUs, then memory) whose node room holds a pod of that size."""
    fits = [name for name in MACHINE_TYPES if node_room(name)[0] >= cpu_m and node_room(name)[1] >= mem_mi]
    return sorted(fits, key=lambda n: (MACHINE_TYPES[n], n))[:count]


def _gb(mi: int) -> str:
    return f"{mi / 1024:.1f} GiB"


def check(
    *,
    tier: str,
    flavour: str,
    workers: int,
    worker_cores: int,
    worker_memory_gb: int,
    machine_type: str,
    quota_cpu: int,
    quota_memory_gb: int,
    quota_pods: int,
    mirrors: int,
    brokers: int,
) -> list[tuple[str, str]]:
    """Every sizing problem of one spec's (filled-in) values, as (field, message)."""
    problems: list[tuple[str, str]] = []
    ceiling = CEILINGS[tier]
    if workers > ceiling["workers"]:
        problems.append(
            (
                "spark.workers",
                f"{workers} workers is above the {tier} tier's ceiling of "
                f"{ceiling['workers']}: ask for at most {ceiling['workers']}",
            )
        )
    for key, unit in (("cpu", "CPUs"), ("memory_gb", "GB"), ("pods", "pods")):
        asked = {"cpu": quota_cpu, "memory_gb": quota_memory_gb, "pods": quota_pods}[key]
        if asked > ceiling[key]:
            problems.append(
                (
                    f"quota.{key}",
                    f"{asked} {unit} is above the {tier} tier's ceiling of {ceiling[key]} "
                    f"{unit}: ask for at most {ceiling[key]}, or for a tier change",
                )
            )
    machine = machine_problem(machine_type)
    if machine:
        problems.append(("spark.machine_type", machine))
        return problems
    vcpus, machine_gb = MACHINE_TYPES[machine_type]
    if flavour == "vm":
        room = vm_worker_room_gb(machine_gb)
        if worker_cores > vcpus or worker_memory_gb > room:
            problems.append(
                (
                    "spark.machine_type",
                    f"{machine_type} has {vcpus} vCPUs / {machine_gb:g} GB, of which the "
                    f"OS and the worker daemon keep {machine_gb - room:g} GB: a worker of "
                    f"{worker_cores} CPUs / {worker_memory_gb} GB does not fit: use "
                    f"worker_cores <= {vcpus} and worker_memory_gb <= {room}, "
                    f"or machine_type {' or '.join(_vm_fits(worker_cores, worker_memory_gb))}",
                )
            )
        return problems

    cpu_m, mem_mi, executors_mi = worker_pod(worker_cores, worker_memory_gb)
    if executors_mi < MIN_EXECUTOR_MEMORY_MI:
        smallest = smallest_worker_memory_gb(worker_cores)
        problems.append(
            (
                "spark.worker_memory_gb",
                f"a worker of {worker_memory_gb} GB leaves {executors_mi} MiB to executors after GKE's "
                f"reservations, the node's daemonsets ({DAEMONSET_MEMORY_MI} MiB) and the Spark worker's own "
                f"{WORKER_OVERHEAD_MI} MiB; executors need at least {MIN_EXECUTOR_MEMORY_MI} MiB: "
                f"use worker_memory_gb >= {smallest}",
            )
        )
        return problems
    room_cpu, room_mem = node_room(machine_type)
    if cpu_m > room_cpu or mem_mi > room_mem:
        fits = machines_that_fit(cpu_m, mem_mi)
        problems.append(
            (
                "spark.machine_type",
                f"a worker pod of {worker_cores} CPUs / {worker_memory_gb} GB asks {cpu_m}m / {_gb(mem_mi)}, "
                f"more than a {machine_type} node ({vcpus} vCPUs / {machine_gb:g} GB) has for pods "
                f"({room_cpu}m / {_gb(room_mem)}): use machine_type {' or '.join(fits) or '(none fits)'}, "
                f"or worker_cores <= {vcpus} and worker_memory_gb <= {machine_gb:g}",
            )
        )
        return problems

    # the other pods of the namespace (spark.py's master, kafka_mirror.py's brokers and MM2)
    broker = (int(MIRROR_BROKER_CPU * 1000), MIRROR_BROKER_MEMORY_GB * 1024)
    mm2 = (int(MIRROR_MM2_CPU * 1000), MIRROR_MM2_MEMORY_GB * 1024)
    others = [("the Spark master", (MASTER_CPU_M, MASTER_MEMORY_MI))]
    others += [("a mirror broker", broker)] * (mirrors * brokers) + [("a MirrorMaker 2 pod", mm2)] * mirrors
    pods = [("a Spark worker", (cpu_m, mem_mi))] + others

    # the LimitRange caps every container at the worker's size (infra/team.py: max_container_*)
    for what, (c, m) in others:
        if c > worker_cores * 1000 or m > worker_memory_gb * 1024:
            problems.append(
                (
                    "spark.worker_memory_gb" if m > worker_memory_gb * 1024 else "spark.worker_cores",
                    f"the namespace caps a container at the worker's {worker_cores} CPUs / "
                    f"{worker_memory_gb} GB, and {what} needs {c}m / {_gb(m)}: use worker_cores >= "
                    f"{-(-c // 1000)} and worker_memory_gb >= {-(-m // 1024)}",
                )
            )
            break
    largest_cpu = max(c for _, (c, _) in pods)
    largest_mem = max(m for _, (_, m) in pods)
    if quota_cpu * 1000 < largest_cpu:
        problems.append(
            (
                "quota.cpu",
                f"{quota_cpu} CPUs is less than the largest pod ({largest_cpu}m): "
                f"use quota.cpu >= {-(-largest_cpu // 1000)}",
            )
        )
    if quota_memory_gb * 1024 < largest_mem:
        problems.append(
            (
                "quota.memory_gb",
                f"{quota_memory_gb} GB is less than the largest pod ({_gb(largest_mem)}): "
                f"use quota.memory_gb >= {-(-largest_mem // 1024)}",
            )
        )
    if quota_pods < len(pods) - 1 + workers:
        need = len(pods) - 1 + workers
        problems.append(
            (
                "quota.pods",
                f"{quota_pods} pods is fewer than the namespace runs ({workers} workers, the "
                f"master and {mirrors * (brokers + 1)} mirror pods): use quota.pods >= {need}",
            )
        )

    # the node pool: one worker a node (anti-affinity) on workers + SPARE_NODES nodes; the other
    # pods go where there is room, largest first
    rooms = [[room_cpu - cpu_m, room_mem - mem_mi] for _ in range(workers)]
    rooms += [[room_cpu, room_mem] for _ in range(SPARE_NODES)]
    left_out = []
    for what, (c, m) in sorted(others, key=lambda p: (p[1][1], p[1][0]), reverse=True):
        for room in rooms:
            if room[0] >= c and room[1] >= m:
                room[0] -= c
                room[1] -= m
                break
        else:
            left_out.append(what)
    if left_out:
        need_cpu = sum(c for _, (c, _) in others)
        need_mem = sum(m for _, (_, m) in others)
        problems.append(
            (
                "spark.machine_type",
                f"the node pool ({workers} workers + {SPARE_NODES} spare node(s) of {machine_type}) has no room "
                f"for {', '.join(sorted(set(left_out)))}: the master and mirrors need {need_cpu}m / "
                f"{_gb(need_mem)} besides the workers, a spare {machine_type} node holds {room_cpu}m / "
                f"{_gb(room_mem)}: use a larger machine_type ({' or '.join(machines_that_fit(need_cpu, need_mem))})"
                f" or fewer mirrored clusters",
            )
        )
    return problems


# What a VM keeps for the OS, the page cache and the Spark worker daemon itself: a tenth of its
# memory, at least 2 GB (Spark's own worker.memory default leaves 1 GB; the kernel and agents more).
VM_OS_SHARE, VM_OS_MIN_GB = 0.10, 2


def vm_worker_room_gb(machine_gb: float) -> int:
    """The most memory (whole GB) a Spark worker may offer executors on a VM of machine_gb."""
    return int(machine_gb - max(VM_OS_MIN_GB, machine_gb * VM_OS_SHARE))


def _vm_fits(cores: int, memory_gb: int) -> list[str]:
    fits = [n for n, (v, g) in MACHINE_TYPES.items() if v >= cores and vm_worker_room_gb(g) >= memory_gb]
    return sorted(fits, key=lambda n: (MACHINE_TYPES[n], n))[:3] or ["(none fits)"]


# -- cores for a rate: the measured throughput ----------------------------------------------------

THROUGHPUT_PATH = Path(__file__).with_name("throughput.json")


@dataclass(frozen=True)
class Throughput:
    """What one executor core carries, measured: the seeds' surge dagger on the lab's standalone
    cluster (bench/scaling.py), how well a second executor adds to the first (`efficiency`, at most
    1), and the share of its cores a cluster is planned to use at the team's peak (`utilisation`:
    the rest catches up a backlog after a failover or a sink outage)."""

    per_core_msgs_per_s: float
    efficiency: float
    utilisation: float

    def usable_per_core(self) -> float:
        return self.per_core_msgs_per_s * self.efficiency * self.utilisation

    def executor_cores(self, peak_msgs_per_s: int) -> int:
        """Executor cores for a peak rate (pure)."""
        return max(1, math.ceil(peak_msgs_per_s / self.usable_per_core()))

    def capacity(self, cores: int) -> int:
        """The peak rate `cores` executor cores are planned for (pure)."""
        return math.floor(cores * self.usable_per_core())

    def __post_init__(self):
        # a figure that would size every cluster at one worker, or divide by zero
        if not (math.isfinite(self.per_core_msgs_per_s) and self.per_core_msgs_per_s > 0):
            raise ValueError(f"per_core_msgs_per_s must be a positive number, not {self.per_core_msgs_per_s!r}")
        for name in ("efficiency", "utilisation"):
            value = getattr(self, name)
            if not 0 < value <= 1:
                raise ValueError(f"{name} must be above 0 and at most 1, not {value!r}")


@functools.cache
def throughput(path: Path = THROUGHPUT_PATH) -> Throughput:
    doc = json.loads(path.read_text())
    try:
        return Throughput(
            per_core_msgs_per_s=float(doc["per_core_msgs_per_s"]),
            efficiency=float(doc["efficiency"]),
            utilisation=float(doc["utilisation"]),
        )
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None


# Never fewer workers than this for a stated peak: one worker lost would stop every dagger
MIN_WORKERS = 2


def workers_for(peak_msgs_per_s: int, worker_cores: int, measured: Throughput | None = None) -> int:
    """Spark workers of `worker_cores` cores each for a peak rate: its executors' cores, and never
    fewer than MIN_WORKERS. Each dagger's driver takes a core on top (the spec adds workers for them)."""
    cores = (measured or throughput()).executor_cores(peak_msgs_per_s)
    return max(MIN_WORKERS, math.ceil(cores / worker_cores))


def peak_problem(
    peak_msgs_per_s: int, workers: int, worker_cores: int, measured: Throughput | None = None
) -> str | None:
    """Why `workers` workers are too few for the team's stated peak, or None."""
    measured = measured or throughput()
    needed = workers_for(peak_msgs_per_s, worker_cores, measured)
    if workers >= needed:
        return None
    return (
        f"{workers} workers x {worker_cores} cores are planned for {measured.capacity(workers * worker_cores):,} msg/s "
        f"(infra/throughput.json: {measured.per_core_msgs_per_s:,.0f} msg/s a core, measured, at "
        f"{measured.utilisation:.0%} of the cores); spark.peak_msgs_per_s {peak_msgs_per_s:,} needs "
        f"{measured.executor_cores(peak_msgs_per_s)} cores: use workers >= {needed}, or leave workers out "
        "and the platform sizes them"
    )
