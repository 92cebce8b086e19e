"""CheckpointBucket: where a team's Spark queries keep their checkpoints.

Uniform bucket-level access (no object ACLs), public access prevention enforced, versioning,
and one grant: roles/storage.objectAdmin to the team's own service account.

Retention: the lifecycle rule deletes *noncurrent* versions `retention_days` after they stop
being current, i.e. files Spark has overwritten or purged, and checkpoints of deleted daggers,
stay recoverable that long. It deliberately does not delete live objects by age: a streaming
query that runs longer than the retention still needs files it wrote on its first day (its
`metadata`, the first `sources/` entries); deleting those would break its restart.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pulumi
import pulumi_gcp as gcp

from .common import child_opts, component_type

WRITER_ROLE = "roles/storage.objectAdmin"


@dataclass(frozen=True)
class CheckpointBucketArgs:
    team: str
    project: str
    bucket_name: str  # GCS: 3-63 characters, lowercase, globally unique
    location: str
    retention_days: int
    writer_member: pulumi.Input[str]  # serviceAccount:<the team's GSA>
    labels: Mapping[str, str] = field(default_factory=dict)


class CheckpointBucket(pulumi.ComponentResource):
    bucket_name: pulumi.Output[str]
    checkpoint_url: pulumi.Output[str]

    def __init__(self, name: str, args: CheckpointBucketArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(component_type("CheckpointBucket"), name, None, opts)
        bucket = gcp.storage.Bucket(
            f"{name}-bucket",
            name=args.bucket_name,
            project=args.project,
            location=args.location.upper(),
            uniform_bucket_level_access=True,
            public_access_prevention="enforced",
            versioning=gcp.storage.BucketVersioningArgs(enabled=True),
            lifecycle_rules=[
                gcp.storage.BucketLifecycleRuleArgs(
                    action=gcp.storage.BucketLifecycleRuleActionArgs(type="Delete"),
                    condition=gcp.storage.BucketLifecycleRuleConditionArgs(
                        days_since_noncurrent_time=args.retention_days, with_state="ARCHIVED"
                    ),
                )
            ],
            labels=dict(args.labels),
            force_destroy=False,
            opts=child_opts(self),
        )
        gcp.storage.BucketIAMMember(
            f"{name}-writer", bucket=bucket.name, role=WRITER_ROLE, member=args.writer_member, opts=child_opts(self)
        )
        self.bucket_name = bucket.name
        self.checkpoint_url = bucket.name.apply(lambda b: f"gs://{b}/checkpoints")
        self.register_outputs({"bucket_name": self.bucket_name, "checkpoint_url": self.checkpoint_url})
