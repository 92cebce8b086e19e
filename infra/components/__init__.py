"""The building blocks of a team's isolated platform, one ComponentResource per module.

Each takes an Args dataclass (plain values and Pulumi inputs; no config is read here), names its
children after its own name (two instances never collide) and parents them to itself.
"""

from .bucket import CheckpointBucket, CheckpointBucketArgs
from .identity import TeamIdentity, TeamIdentityArgs, WorkloadIdentity
from .kafka_mirror import KafkaMirror, KafkaMirrorArgs, MirrorOnGke, MirrorOnVms, mm2_properties, parse_properties
from .network import NamespaceIsolation, Quota, TeamNetwork, TeamNetworkArgs
from .spark import GkePlacement, PlacementError, SparkCluster, SparkClusterArgs, VmPlacement

__all__ = [
    "CheckpointBucket",
    "CheckpointBucketArgs",
    "TeamIdentity",
    "TeamIdentityArgs",
    "WorkloadIdentity",
    "KafkaMirror",
    "KafkaMirrorArgs",
    "MirrorOnGke",
    "MirrorOnVms",
    "mm2_properties",
    "parse_properties",
    "NamespaceIsolation",
    "Quota",
    "TeamNetwork",
    "TeamNetworkArgs",
    "GkePlacement",
    "PlacementError",
    "SparkCluster",
    "SparkClusterArgs",
    "VmPlacement",
]
