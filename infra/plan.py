"""plan: what a team's stack would declare, for the reviewer of the team's pull request.

    python -m infra.plan infra/teams/<team>.yaml [--json]

Runs the team's program in process under Pulumi's mocks (infra.mocks.declare: no CLI, no cloud)
and prints the resources grouped by component, each with the properties that make or break
isolation: names, namespaces, ranges, IAM members and roles, bucket access, firewall sources,
quotas. --json prints the same for machines (every input too, secrets redacted).
Exit status: 0, or 2 when the spec is refused (the reasons on stderr).
"""

from __future__ import annotations

import time

from .components import PlacementError
from .mocks import declare
from .team import OUTPUT_NAMES, SECRET_OUTPUT_NAMES

START = time.perf_counter()

import argparse  # noqa: E402  (START first: the time printed includes the imports)
import json  # noqa: E402
import sys  # noqa: E402
from collections.abc import Callable, Sequence  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from dagger_runtime.closed_pipe import survives_closed_pipe  # noqa: E402
from dagger_runtime.yaml_lines import printable  # noqa: E402

from .spec import SpecError, TeamSpec, load, load_platform  # noqa: E402

REDACTED = "[secret]"
# components first in this order, then anything else by name
COMPONENT_ORDER = ("TeamPlatform", "TeamNetwork", "TeamIdentity", "CheckpointBucket", "SparkCluster", "KafkaMirror")


def short_type(token: str) -> str:
    """gcp:compute/firewall:Firewall -> compute.Firewall; kubernetes:apps/v1:Deployment -> k8s.Deployment."""
    package, module, kind = (token.split(":") + ["", ""])[:3]
    if package == "daggers":
        return kind
    if package == "kubernetes":
        return f"k8s.{kind}"
    if package == "pulumi":
        return f"pulumi.{kind}" if module != "providers" else f"provider.{kind}"
    return f"{module.split('/')[0]}.{kind}"


def cloud_name(d) -> str:
    """The name the resource has in GCP or Kubernetes (or, for an IAM grant, its role)."""
    i = d.inputs
    if "role" in i and "member" in i:
        return i["role"]
    if "accountId" in i:
        return i["accountId"]
    if isinstance(i.get("metadata"), dict) and i["metadata"].get("name"):
        return i["metadata"]["name"]
    return str(i.get("name") or d.name)


def _yes(value: Any) -> str:
    return "yes" if value else "no"


def _k8s(d) -> dict[str, Any]:
    return {"namespace": d.get("metadata.namespace")} if d.get("metadata.namespace") else {}


def _firewall(d) -> dict[str, Any]:
    rules = d.inputs.get("allows") or d.inputs.get("denies") or []
    action = "allow" if d.inputs.get("allows") else "deny"
    what = ", ".join(f"{r.get('protocol')}:{','.join(r.get('ports', [])) or '*'}" for r in rules)
    return {
        "direction": d.inputs.get("direction"),
        "priority": d.inputs.get("priority"),
        action: what,
        "sources": ",".join(d.inputs.get("sourceRanges", [])),
        "targets": ",".join(d.inputs.get("targetTags", [])),
    }


def _network_policy(d) -> dict[str, Any]:
    spec = d.inputs.get("spec", {})

    def peers(rules: list, key: str) -> str:
        out = []
        for rule in rules:
            ports = ",".join(f"{p.get('port')}/{p.get('protocol', 'TCP').lower()}" for p in rule.get("ports", []))
            for peer in rule.get(key, []) or [{}]:
                if "ipBlock" in peer:
                    who = peer["ipBlock"]["cidr"]
                elif "namespaceSelector" in peer:
                    who = "ns:" + ",".join(peer["namespaceSelector"].get("matchLabels", {}).values())
                elif "podSelector" in peer:
                    who = "same-namespace"
                else:
                    who = "any"
                out.append(who + (f":{ports}" if ports else ""))
        return " ".join(out) or "none"

    return {
        **_k8s(d),
        "types": "+".join(spec.get("policyTypes", [])),
        "ingress from": peers(spec.get("ingress", []), "from"),
        "egress to": peers(spec.get("egress", []), "to"),
    }


def _workload(d) -> dict[str, Any]:
    spec = d.inputs.get("spec", {})
    pod = spec.get("template", {}).get("spec", {})
    containers = pod.get("containers", [])
    res = containers[0].get("resources", {}).get("requests", {}) if containers else {}
    return {
        **_k8s(d),
        "replicas": spec.get("replicas"),
        "sa": pod.get("serviceAccountName", "default"),
        "nodes": ",".join(f"{k}={v}" for k, v in pod.get("nodeSelector", {}).items()),
        "requests": f"{res.get('cpu')} cpu/{res.get('memory')}" if res else "-",
    }


def _node_pool(d) -> dict[str, Any]:
    node = d.inputs.get("nodeConfig", {})
    scale = d.inputs.get("autoscaling", {})
    taints = ",".join(f"{t['key']}={t['value']}:{t['effect']}" for t in node.get("taints", []))
    return {
        "machine": node.get("machineType"),
        "nodes": f"{scale.get('totalMinNodeCount')}-{scale.get('totalMaxNodeCount')}",
        "taint": taints,
        "sa": node.get("serviceAccount"),
        "pod range": d.get("networkConfig.podIpv4CidrBlock"),
        "tags": ",".join(node.get("tags", [])),
    }


def _bucket(d) -> dict[str, Any]:
    rules = d.inputs.get("lifecycleRules", [])
    keep = ", ".join(
        f"{r['action']['type'].lower()} noncurrent after {r['condition']['daysSinceNoncurrentTime']}d"
        if r.get("condition", {}).get("daysSinceNoncurrentTime")
        else r["action"]["type"].lower()
        for r in rules
    )
    return {
        "location": d.inputs.get("location"),
        "uniform access": _yes(d.inputs.get("uniformBucketLevelAccess")),
        "public access": "prevented" if d.inputs.get("publicAccessPrevention") == "enforced" else "NOT prevented",
        "versioning": _yes(d.get("versioning.enabled")),
        "lifecycle": keep or "none",
        "force_destroy": _yes(d.inputs.get("forceDestroy")),
    }


def _instance(d) -> dict[str, Any]:
    nics = d.outputs.get("networkInterfaces") or d.inputs.get("networkInterfaces", [])
    external = any(nic.get("accessConfigs") for nic in nics)
    return {
        "machine": d.inputs.get("machineType"),
        "zone": d.inputs.get("zone"),
        "ip": ",".join(str(nic.get("networkIp", "?")) for nic in nics),
        "external ip": _yes(external),
        "sa": d.get("serviceAccount.email"),
        "tags": ",".join(d.inputs.get("tags", [])),
    }


def _config_map(d) -> dict[str, Any]:
    data = d.inputs.get("data", {})
    props = {}
    for text in data.values():
        for line in str(text).splitlines():
            key, _, value = line.partition("=")
            props[key.strip()] = value.strip()
    policy = props.get("replication.policy.class", "").rsplit(".", 1)[-1]
    return {**_k8s(d), "keys": ",".join(sorted(data)), **({"replication policy": policy} if policy else {})}


SUMMARIES: dict[str, Callable[[Any], dict[str, Any]]] = {
    "gcp:serviceaccount/account:Account": lambda d: {
        "project": d.inputs.get("project"),
        "email": d.outputs.get("email"),
    },
    "gcp:projects/iAMMember:IAMMember": lambda d: {
        "project": d.inputs.get("project"),
        "member": d.inputs.get("member"),
    },
    "gcp:serviceaccount/iAMMember:IAMMember": lambda d: {
        "on": d.inputs.get("serviceAccountId", "").rsplit("/", 1)[-1],
        "member": d.inputs.get("member"),
    },
    "gcp:storage/bucketIAMMember:BucketIAMMember": lambda d: {
        "bucket": d.inputs.get("bucket"),
        "member": d.inputs.get("member"),
    },
    "gcp:storage/bucket:Bucket": _bucket,
    "gcp:compute/subnetwork:Subnetwork": lambda d: {
        "range": d.inputs.get("ipCidrRange"),
        "region": d.inputs.get("region"),
        "private google access": _yes(d.inputs.get("privateIpGoogleAccess")),
    },
    "gcp:compute/router:Router": lambda d: {"region": d.inputs.get("region")},
    "gcp:compute/routerNat:RouterNat": lambda d: {
        "region": d.inputs.get("region"),
        "nat for": ",".join(s["name"].rsplit("/", 1)[-1] for s in d.inputs.get("subnetworks", [])),
    },
    "gcp:compute/firewall:Firewall": _firewall,
    "gcp:compute/instance:Instance": _instance,
    "gcp:container/nodePool:NodePool": _node_pool,
    "kubernetes:core/v1:Namespace": lambda d: {
        "labels": ",".join(
            f"{k}={v}"
            for k, v in sorted(d.get("metadata.labels", {}).items())
            if k in ("team", "tier", "daggers.dev/team", "pod-security.kubernetes.io/enforce")
        )
    },
    "kubernetes:core/v1:ResourceQuota": lambda d: {
        **_k8s(d),
        **{k: v for k, v in d.get("spec.hard", {}).items() if k in ("requests.cpu", "requests.memory", "pods")},
    },
    "kubernetes:core/v1:LimitRange": lambda d: {
        **_k8s(d),
        "max": "/".join(str(v) for v in (d.get("spec.limits.0.max") or {}).values()),
    },
    "kubernetes:networking.k8s.io/v1:NetworkPolicy": _network_policy,
    "kubernetes:rbac.authorization.k8s.io/v1:Role": lambda d: {**_k8s(d), "rules": len(d.inputs.get("rules", []))},
    "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding": lambda d: {
        **_k8s(d),
        "role": d.get("roleRef.name"),
        "subjects": ",".join(f"{s.get('kind')}:{s.get('name')}" for s in d.inputs.get("subjects", [])),
    },
    "kubernetes:core/v1:ServiceAccount": lambda d: {
        **_k8s(d),
        "gsa": (d.get("metadata.annotations") or {}).get("iam.gke.io/gcp-service-account"),
    },
    "kubernetes:core/v1:Service": lambda d: {
        **_k8s(d),
        "ports": ",".join(str(p.get("port")) for p in d.get("spec.ports", [])),
        "headless": _yes(d.get("spec.clusterIP") == "None"),
    },
    "kubernetes:core/v1:ConfigMap": _config_map,
    "kubernetes:apps/v1:Deployment": _workload,
    "kubernetes:apps/v1:StatefulSet": _workload,
    "pulumi:pulumi:StackReference": lambda d: {"stack": d.inputs.get("name")},
    "pulumi:providers:kubernetes": lambda d: {
        "kubeconfig": "from the platform stack (secret)" if "kubeconfig" in d.inputs else "-"
    },
}


def properties(d) -> dict[str, Any]:
    """The isolation-relevant properties of one declared resource (empty values dropped)."""
    summary = SUMMARIES.get(d.type, lambda _: {})(d)
    return {k: v for k, v in summary.items() if v not in (None, "", [], {})}


def redacted_inputs(d) -> dict[str, Any]:
    return {k: (REDACTED if k in d.secrets else v) for k, v in d.inputs.items()}


def grouped(declared: Sequence) -> list[tuple[Any, list]]:
    """[(component or None for the stack itself, [its resources])], in a stable order."""
    components = {d.name: d for d in declared if d.is_component}
    groups: dict[str | None, list] = {}
    for d in declared:
        if not d.is_component:
            groups.setdefault(d.parent, []).append(d)
    for name in components:
        groups.setdefault(name, [])

    def order(name: str | None) -> tuple:
        if name is None:
            return (-1, "")
        kind = components[name].type.rsplit(":", 1)[-1] if name in components else ""
        rank = COMPONENT_ORDER.index(kind) if kind in COMPONENT_ORDER else len(COMPONENT_ORDER)
        return (rank, name)

    return [
        (
            components.get(name) if name else None,
            sorted(groups[name], key=lambda d: (short_type(d.type), cloud_name(d), d.name)),
        )
        for name in sorted(groups, key=order)
    ]


def as_json(spec: TeamSpec, declared: Sequence, outputs: dict, elapsed: dict[str, float]) -> dict[str, Any]:
    return {
        "team": spec.name,
        "tier": spec.tier,
        "flavour": spec.spark.flavour,
        "spec": spec.source,
        "stack": spec.name,
        "elapsed_seconds": elapsed,
        "outputs": outputs,
        "resource_count": sum(1 for d in declared if not d.is_component),
        "components": [
            {
                "type": comp.type if comp else "pulumi:pulumi:Stack",
                "name": comp.name if comp else spec.name,
                "urn": comp.urn if comp else None,
                "resources": [
                    {
                        "type": d.type,
                        "name": d.name,
                        "cloud_name": cloud_name(d),
                        "urn": d.urn,
                        "properties": properties(d),
                        "inputs": redacted_inputs(d),
                    }
                    for d in members
                ],
            }
            for comp, members in grouped(declared)
        ],
    }


def as_table(spec: TeamSpec, project: str, declared: Sequence, outputs: dict) -> str:
    s = spec.spark
    lines = [
        f"plan: team {spec.name} · tier {spec.tier} · spark {s.flavour} ({s.workers} workers × "
        f"{s.machine_type}{f', for {s.peak_msgs_per_s:,} msg/s' if s.peak_msgs_per_s else ''}) · "
        f"region {spec.region} · range {spec.cidr}",
        f"spec {spec.source} · stack {spec.name} · project {project} · owners {', '.join(spec.owners)}",
    ]
    rows_by_group = []
    for comp, members in grouped(declared):
        title = f"{comp.type.rsplit(':', 1)[-1]} {comp.name}" if comp else "stack"
        rows = [
            (short_type(d.type), cloud_name(d), "  ".join(f"{k}={v}" for k, v in properties(d).items()))
            for d in members
        ]
        rows_by_group.append((title, rows))
    width_type = max((len(r[0]) for _, rows in rows_by_group for r in rows), default=8)
    width_name = min(48, max((len(r[1]) for _, rows in rows_by_group for r in rows), default=8))
    for title, rows in rows_by_group:
        if not rows:
            continue
        lines += ["", title]
        lines += [f"  {t:<{width_type}}  {n:<{width_name}}  {p}".rstrip() for t, n, p in rows]
    lines += ["", "outputs"]
    for key, value in outputs.items():
        if key == "inventory" and value:
            groups = sorted((g, len(b.get("hosts", []))) for g, b in value.items() if g not in ("_meta", "all"))
            value = ", ".join(f"{g}: {n} host{'s' if n != 1 else ''}" for g, n in groups)
        elif isinstance(value, dict):
            entries = [f"{k}: {v}" for k, v in sorted(value.items())] or ["-"]
            lines.append(f"  {key:<26} {entries[0]}")
            lines += [f"  {'':<26} {e}" for e in entries[1:]]
            continue
        lines.append(f"  {key:<26} {value if value not in (None, '') else '-'}")
    return "\n".join(lines)


def build_parser(prog: str = "python -m infra.plan") -> argparse.ArgumentParser:
    """The command line's parser (`dagger` builds it under its own name; docs/reference/commands.md)."""
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    parser.add_argument("spec", type=Path, help="a team spec, infra/teams/<team>.yaml")
    parser.add_argument("--json", action="store_true", help="print JSON (every input, secrets redacted)")
    return parser


@survives_closed_pipe
def main(argv: Sequence[str] | None = None, prog: str = "python -m infra.plan") -> int:
    args = build_parser(prog).parse_args(argv)
    if hasattr(sys.stdout, "reconfigure"):  # the table's own '·' and '×' on an ASCII stdout
        sys.stdout.reconfigure(errors="backslashreplace")

    # the spec's text in a problem is quoted already (yaml_lines.shown); each line printed goes out
    # through printable() too: no line of its own, no terminal sequence (the plan is a PR comment)
    try:
        platform = load_platform()
        spec = load(args.spec, platform)
    except SpecError as e:
        print("invalid team spec:", file=sys.stderr)
        for problem in e.problems:
            print(f"  - {printable(problem)}", file=sys.stderr)
        return 2

    started = time.perf_counter()
    try:
        declared = declare(spec, platform)
    except PlacementError as e:
        print(f"invalid team spec:\n  - {printable(f'{spec.source}: {e}')}", file=sys.stderr)
        return 2
    finished = time.perf_counter()
    team = next(d for d in declared if d.type == "daggers:infra:TeamPlatform")
    outputs = {name: team.outputs.get(name) for name in OUTPUT_NAMES}
    # as `pulumi stack output` shows them without --show-secrets
    outputs.update({name: REDACTED for name in SECRET_OUTPUT_NAMES if outputs.get(name) is not None})
    elapsed = {"declare": round(finished - started, 3), "total": round(finished - START, 3)}
    if args.json:
        json.dump(as_json(spec, declared, outputs, elapsed), sys.stdout, indent=2, sort_keys=False, default=str)
        print()
        print(f"plan: {elapsed['total']:.2f} s", file=sys.stderr)
    else:
        print(
            "\n".join(
                printable(line, ascii_only=False)
                for line in as_table(spec, platform.project, declared, outputs).split("\n")
            )
        )
        count = sum(1 for d in declared if not d.is_component)
        components = sum(1 for d in declared if d.is_component)
        print(
            f"\n{count} resources in {components} components · declared in {elapsed['declare']:.2f} s "
            f"· {elapsed['total']:.2f} s with imports"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
