"""TeamIdentity: the team's Google service account, the project roles it needs and nothing more,
and (on GKE) the Kubernetes service account its pods run as, bound through Workload Identity."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from .common import child_opts, component_type, k8s_labels, slug

WORKLOAD_IDENTITY_ROLE = "roles/iam.workloadIdentityUser"
WORKLOAD_IDENTITY_ANNOTATION = "iam.gke.io/gcp-service-account"


@dataclass(frozen=True)
class WorkloadIdentity:
    """The Kubernetes side of a team identity (gke flavour)."""

    namespace: pulumi.Input[str]
    workload_pool: pulumi.Input[str]  # <project>.svc.id.goog, from the platform stack
    ksa_name: str = "dagger"


@dataclass(frozen=True)
class TeamIdentityArgs:
    team: str
    project: str
    account_id: str  # GCP: 6-30 characters
    # project-level roles granted to the account; buckets and the like are granted on the resource
    project_roles: tuple[str, ...]
    labels: Mapping[str, str] = field(default_factory=dict)
    workload_identity: WorkloadIdentity | None = None


class TeamIdentity(pulumi.ComponentResource):
    email: pulumi.Output[str]
    member: pulumi.Output[str]  # serviceAccount:<email>, the IAM member of the team
    ksa_name: pulumi.Output[str] | None

    def __init__(self, name: str, args: TeamIdentityArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(component_type("TeamIdentity"), name, None, opts)
        self.account = gcp.serviceaccount.Account(
            f"{name}-gsa",
            project=args.project,
            account_id=args.account_id,
            display_name=f"daggers: team {args.team}",
            description=f"Runs team {args.team}'s Spark clusters and Kafka mirrors (managed by daggers infra)",
            opts=child_opts(self),
        )
        self.email = self.account.email
        self.member = self.email.apply(lambda email: f"serviceAccount:{email}")
        for role in args.project_roles:
            gcp.projects.IAMMember(
                f"{name}-{slug(role.removeprefix('roles/'))}",
                project=args.project,
                role=role,
                member=self.member,
                opts=child_opts(self),
            )

        self.ksa_name = None
        wi = args.workload_identity
        if wi is not None:
            ksa = k8s.core.v1.ServiceAccount(
                f"{name}-ksa",
                metadata=k8s.meta.v1.ObjectMetaArgs(
                    name=wi.ksa_name,
                    namespace=wi.namespace,
                    labels=k8s_labels(args.labels, args.team, "identity"),
                    annotations={WORKLOAD_IDENTITY_ANNOTATION: self.email},
                ),
                opts=child_opts(self),
            )
            self.ksa_name = ksa.metadata.name
            gcp.serviceaccount.IAMMember(
                f"{name}-workload-identity",
                service_account_id=self.account.name,
                role=WORKLOAD_IDENTITY_ROLE,
                member=pulumi.Output.concat(
                    "serviceAccount:", wi.workload_pool, "[", wi.namespace, "/", self.ksa_name, "]"
                ),
                opts=child_opts(self),
            )

        self.register_outputs({"email": self.email, "member": self.member, "ksa_name": self.ksa_name})
