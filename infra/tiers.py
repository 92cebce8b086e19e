"""Defaults by criticality tier, so the smallest team request is a few lines."""

from __future__ import annotations

SIZES = {
    # workers, cores and memory per worker, machine type (vm flavour and GKE node pool)
    "small": {"workers": 2, "worker_cores": 4, "worker_memory_gb": 16, "machine_type": "e2-standard-4"},
    "medium": {"workers": 4, "worker_cores": 8, "worker_memory_gb": 32, "machine_type": "n2-standard-8"},
    "large": {"workers": 8, "worker_cores": 16, "worker_memory_gb": 64, "machine_type": "n2-standard-16"},
}

TIERS = {
    "critical": {
        "spark": {"flavour": "gke", "size": "large"},
        "kafka": [{"cluster": "esb-critical", "mirrored": True}, {"cluster": "mainstream", "mirrored": True}],
        "checkpoints": {"retention_days": 14},
        "quota": {"cpu": 160, "memory_gb": 640, "pods": 200},
    },
    "standard": {
        "spark": {"flavour": "gke", "size": "medium"},
        "kafka": [{"cluster": "mainstream", "mirrored": True}],
        "checkpoints": {"retention_days": 7},
        "quota": {"cpu": 48, "memory_gb": 192, "pods": 100},
    },
    "experimental": {
        "spark": {"flavour": "gke", "size": "small"},
        "kafka": [{"cluster": "playground", "mirrored": False}],
        "checkpoints": {"retention_days": 3},
        "quota": {"cpu": 16, "memory_gb": 64, "pods": 40},
    },
}

# Brokers of each team's Kafka mirror by tier (also its replication factor, up to 3), and what
# each mirror pod asks for: spec validation and the KafkaMirror component read the same numbers.
MIRROR_BROKERS = {"critical": 3, "standard": 1, "experimental": 1}
MIRROR_BROKER_CPU, MIRROR_BROKER_MEMORY_GB = 1, 4
MIRROR_MM2_CPU, MIRROR_MM2_MEMORY_GB = 0.5, 1

# The most a team of each tier may ask for in its namespace quota, and its Spark workers: a
# team raises its own quota in its spec (CODEOWNERS makes the platform team review it), but
# never past its tier's ceiling without moving tier. Sized so that each tier's largest preset
# (with its mirrors) fits with room to grow, and so that one team cannot take the shared GKE
# cluster's whole capacity.
CEILINGS = {
    "critical": {"cpu": 512, "memory_gb": 2048, "pods": 500, "workers": 32},
    "standard": {"cpu": 128, "memory_gb": 512, "pods": 200, "workers": 16},
    "experimental": {"cpu": 32, "memory_gb": 128, "pods": 60, "workers": 4},
}
