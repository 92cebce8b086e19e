"""Run the stacks' programs in process under Pulumi's mocks, and record what they declare.

    from infra.mocks import declare
    resources = declare(spec, platform)      # list[Declared], in registration order

No Pulumi CLI, no cloud: `pulumi.runtime.set_mocks` swaps the engine for PlatformMocks, which
returns plausible outputs (ids, service-account emails, internal IPs from the subnetwork's range,
zones, the platform stack's outputs for the StackReference) and a recording monitor keeps each
resource's type, name, URN, parent and resolved inputs. The team program reads the platform
stack's outputs from a real run of the platform program under the same mocks, so the contract
between the two stacks is exercised too.

Runs are serialised (Pulumi's runtime settings are process-wide) and each starts from a fresh
root stack, monitor and mocks, so any number of specs can be declared in one process.
"""

from __future__ import annotations

import asyncio
import base64
import gc
import hashlib
import ipaddress
import random
import string
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pulumi
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime import rpc, settings
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _ensure_event_loop, _sync_await

from . import platform_stack
from .spec import Platform, TeamSpec, load_platform
from .team import DEFAULT_GROUPS_DOMAIN, team_program

PROJECT = "daggers"  # the Pulumi project (Pulumi.yaml)
ORGANIZATION = "organization"
PLATFORM_STACK_NAME = f"{ORGANIZATION}/{PROJECT}/{platform_stack.STACK}"

GENERATED_SECRET = "random:index/randomPassword:RandomPassword"
_ALPHANUMERIC = string.ascii_letters + string.digits
_RUN_LOCK = threading.Lock()
_slot = threading.local()  # hands a resource's mocked args from the mocks to the monitor (same thread)


@dataclass(frozen=True)
class Declared:
    """One resource a program declared."""

    type: str  # e.g. gcp:storage/bucket:Bucket, daggers:infra:CheckpointBucket
    name: str  # logical (Pulumi) name
    urn: str
    parent: str | None  # the parent's logical name; None when the parent is the stack
    parent_type: str | None
    inputs: dict[str, Any]  # as the provider receives them (wire names, outputs resolved, secrets unwrapped)
    outputs: dict[str, Any] = field(default_factory=dict)  # custom: mocked state; component: registered outputs
    custom: bool = True
    secrets: frozenset[str] = frozenset()  # top-level input keys that were secret

    @property
    def is_component(self) -> bool:
        return not self.custom

    def get(self, path: str, default: Any = None) -> Any:
        """A nested input by dotted path: d.get("metadata.namespace"), d.get("allows.0.ports")."""
        value: Any = self.inputs
        for part in path.split("."):
            if isinstance(value, Mapping) and part in value:
                value = value[part]
            elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
                value = value[int(part)]
            else:
                return default
        return value


def _unwrap(value: Any) -> tuple[Any, bool]:
    """Resolve secrets (recursively) and give whole numbers back their int type; say whether there was a secret."""
    if rpc.is_rpc_secret(value):
        inner, _ = _unwrap(rpc.unwrap_rpc_secret(value))
        return inner, True
    if isinstance(value, dict):
        out, secret = {}, False
        for k, v in value.items():
            out[k], s = _unwrap(v)
            secret |= s
        return out, secret
    if isinstance(value, list):
        pairs = [_unwrap(v) for v in value]
        return [v for v, _ in pairs], any(s for _, s in pairs)
    if isinstance(value, float) and value.is_integer():
        return int(value), False  # the wire has doubles only; 3.0 was a 3 in the program
    return value, False


class PlatformMocks(pulumi.runtime.Mocks):
    """Plausible outputs for the resources and invokes the stacks use."""

    def __init__(
        self,
        platform: Platform,
        stack_outputs: Mapping[str, Mapping[str, Any]] | None = None,
        secret_outputs: Mapping[str, tuple[str, ...]] | None = None,
    ):
        self.platform = platform
        self.stack_outputs = dict(stack_outputs or {})
        self.secret_outputs = dict(secret_outputs or {})
        self._lock = threading.Lock()
        self._subnets: dict[str, ipaddress.IPv4Network] = {}
        self._taken: set[ipaddress.IPv4Address] = set()

    # -- invokes -------------------------------------------------------------------------------
    def call(self, args: pulumi_mocks.MockCallArgs):
        if args.token == "gcp:compute/getZones:getZones":
            region = args.args.get("region") or self.platform.region
            return {
                "id": region,
                "project": args.args.get("project"),
                "region": region,
                "names": [f"{region}-{z}" for z in "abc"],
            }
        raise NotImplementedError(f"no mock for invoke {args.token}")

    # -- resources ------------------------------------------------------------------------------
    def new_resource(self, args: pulumi_mocks.MockResourceArgs):
        inputs, _ = _unwrap(dict(args.inputs))
        rid, state = self._state(args.typ, args.name, inputs)
        _slot.args = (args, inputs, state)
        return rid, state

    def _state(self, typ: str, name: str, i: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        project = i.get("project") or self.platform.project
        state = dict(i)
        cloud_name = i.get("name") or name
        if typ == "pulumi:pulumi:StackReference":
            ref = i["name"]
            if ref not in self.stack_outputs:
                raise KeyError(f"StackReference to {ref!r}: no such stack (known: {sorted(self.stack_outputs)})")
            return ref, {
                "name": ref,
                "outputs": dict(self.stack_outputs[ref]),
                "secretOutputNames": list(self.secret_outputs.get(ref, ())),
            }
        if typ == "gcp:serviceaccount/account:Account":
            email = f"{i['accountId']}@{project}.iam.gserviceaccount.com"
            rid = f"projects/{project}/serviceAccounts/{email}"
            state.update(
                email=email,
                name=rid,
                member=f"serviceAccount:{email}",
                uniqueId=str(int(hashlib.sha256(email.encode()).hexdigest()[:15], 16)),
            )
            return rid, state
        if typ == "gcp:compute/network:Network":
            rid = f"projects/{project}/global/networks/{cloud_name}"
            state.update(name=cloud_name, selfLink=f"https://www.googleapis.com/compute/v1/{rid}")
            return rid, state
        if typ == "gcp:compute/subnetwork:Subnetwork":
            rid = f"projects/{project}/regions/{i['region']}/subnetworks/{cloud_name}"
            cidr = ipaddress.IPv4Network(i["ipCidrRange"])
            with self._lock:
                self._subnets[rid] = cidr
            state.update(
                name=cloud_name,
                selfLink=f"https://www.googleapis.com/compute/v1/{rid}",
                gatewayAddress=str(cidr.network_address + 1),
            )
            return rid, state
        if typ == "gcp:compute/instance:Instance":
            rid = f"projects/{project}/zones/{i['zone']}/instances/{cloud_name}"
            nics = [
                dict(nic, networkIp=self._address(nic.get("subnetwork"), cloud_name))
                for nic in i.get("networkInterfaces", [])
            ]
            state.update(
                name=cloud_name,
                networkInterfaces=nics,
                instanceId=cloud_name,
                selfLink=f"https://www.googleapis.com/compute/v1/{rid}",
            )
            return rid, state
        if typ == "gcp:storage/bucket:Bucket":
            state.update(
                name=cloud_name,
                url=f"gs://{cloud_name}",
                selfLink=f"https://www.googleapis.com/storage/v1/b/{cloud_name}",
            )
            return cloud_name, state
        if typ == "gcp:container/cluster:Cluster":
            rid = f"projects/{project}/locations/{i['location']}/clusters/{cloud_name}"
            ca = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nmock\n-----END CERTIFICATE-----\n").decode()
            auth = {"clusterCaCertificate": ca, "clientCertificateConfig": {"issueClientCertificate": False}}
            state.update(
                name=cloud_name,
                endpoint="172.16.0.2",
                masterAuth=auth,
                selfLink=f"https://container.googleapis.com/v1/{rid}",
            )
            return rid, state
        if typ == GENERATED_SECRET:
            # the engine's provider draws it from the CSPRNG; here a stand-in of the same shape,
            # stable per resource (a plan is a function of the spec) and different per team
            seed = random.Random(hashlib.sha256(name.encode()).digest())
            state["result"] = "".join(seed.choice(_ALPHANUMERIC) for _ in range(int(i["length"])))
            return f"{name}-id", state
        if typ.startswith("kubernetes:") and "metadata" in state:
            meta = dict(state["metadata"])
            meta.setdefault("name", f"{name}-mock")  # Pulumi auto-names what the program does not
            meta.setdefault("uid", hashlib.sha256(name.encode()).hexdigest()[:32])
            state["metadata"] = meta
            rid = f"{meta.get('namespace')}/{meta['name']}" if meta.get("namespace") else meta["name"]
            return rid, state
        if "name" in i:
            state.setdefault("name", cloud_name)
        return f"{cloud_name}-id", state

    def _address(self, subnetwork: str | None, host: str) -> str:
        """An internal IP from the subnetwork's range: stable per host name (hash, then probe)."""
        with self._lock:
            cidr = self._subnets.get(subnetwork or "")
            if cidr is None:
                raise KeyError(f"instance {host}: subnetwork {subnetwork!r} was not declared in this stack")
            usable = cidr.num_addresses - 4  # GCP keeps the first two and the last two
            start = int(hashlib.sha256(host.encode()).hexdigest(), 16) % usable
            for step in range(usable):
                address = cidr.network_address + 2 + (start + step) % usable
                if address not in self._taken:
                    self._taken.add(address)
                    return str(address)
            raise RuntimeError(f"subnetwork {subnetwork} ({cidr}) is full")


class DuplicateUrnError(RuntimeError):
    """Two resources of one program with the same URN, which `pulumi up` refuses."""


class RecordingMonitor(pulumi_mocks.MockMonitor):
    """Pulumi's mock monitor, keeping every registration with its parent, and components' outputs."""

    def __init__(self, mocks: PlatformMocks):
        super().__init__(mocks)
        self._records: list[dict[str, Any]] = []
        self._component_outputs: dict[str, dict[str, Any]] = {}
        self._urns: set[str] = set()
        self._lock = threading.Lock()

    def RegisterResource(self, request):
        _slot.args = None
        response = super().RegisterResource(request)
        with self._lock:
            # the engine refuses two resources with one URN (a spec listing a cluster twice did that)
            if response.urn in self._urns:
                raise DuplicateUrnError(f"Duplicate resource URN '{response.urn}'; try giving it a unique name")
            self._urns.add(response.urn)
        self._record(request, response.urn, custom=bool(request.custom))
        return response

    def ReadResource(self, request):
        _slot.args = None
        response = super().ReadResource(request)
        self._record(request, response.urn, custom=True)
        return response

    def RegisterResourceOutputs(self, request):
        outputs, _ = _unwrap(rpc.deserialize_properties(request.outputs))
        with self._lock:
            self._component_outputs[request.urn] = outputs
        return super().RegisterResourceOutputs(request)

    def _record(self, request, urn: str, *, custom: bool) -> None:
        pending, _slot.args = getattr(_slot, "args", None), None
        if request.type == "pulumi:pulumi:Stack" or pending is None:
            return
        args, inputs, state = pending
        secret_keys = frozenset(k for k, v in args.inputs.items() if _unwrap(v)[1])
        with self._lock:
            self._records.append(
                {
                    "type": request.type,
                    "name": request.name,
                    "urn": urn,
                    "parent_urn": request.parent,
                    "inputs": inputs,
                    "state": state,
                    "custom": custom,
                    "secrets": secret_keys,
                }
            )

    def declared(self) -> list[Declared]:
        out = []
        for r in self._records:
            parent_urn = r["parent_urn"]
            parent_type = parent_urn.split("::")[2].split("$")[-1] if parent_urn else None
            is_stack = parent_type in (None, "pulumi:pulumi:Stack")
            outputs = r["state"] if r["custom"] else self._component_outputs.get(r["urn"], {})
            out.append(
                Declared(
                    type=r["type"],
                    name=r["name"],
                    urn=r["urn"],
                    parent=None if is_stack else parent_urn.split("::")[-1],
                    parent_type=None if is_stack else parent_type,
                    inputs=r["inputs"],
                    outputs=outputs,
                    custom=r["custom"],
                    secrets=r["secrets"],
                )
            )
        return out


def run(program: Callable[[], Any], *, stack: str, mocks: PlatformMocks) -> list[Declared]:
    """Run one Pulumi program under the mocks, as stack `stack`; the resources it declared."""
    monitor = RecordingMonitor(mocks)
    with _RUN_LOCK:
        settings.ROOT.set(None)  # a fresh root stack for this run
        pulumi_mocks.set_mocks(
            mocks, project=PROJECT, stack=stack, preview=False, monitor=monitor, organization=ORGANIZATION
        )
        settings.SETTINGS.outputs.clear()
        try:
            _sync_await(run_pulumi_func(program))
        except BaseException:
            _retrieve_failed_futures(_ensure_event_loop())
            raise
        finally:
            settings.ROOT.set(None)
    return monitor.declared()


def _retrieve_failed_futures(loop: asyncio.AbstractEventLoop) -> None:
    """A program that fails leaves futures of its loop holding the error it raised, which nothing
    awaits. The error reaches the caller; marked as retrieved here, these would otherwise have
    asyncio log "Future exception was never retrieved" whenever a later run lets them go, into
    whatever runs then. Only this run's loop's futures: another loop's are not ours to silence."""
    for thing in gc.get_objects():
        if isinstance(thing, asyncio.Future) and thing.get_loop() is loop and thing.done() and not thing.cancelled():
            thing.exception()


_platform_cache: dict[str, dict[str, Any]] = {}


def platform_outputs(platform: Platform) -> dict[str, Any]:
    """The platform stack's outputs, from running its program under the mocks (cached per platform)."""
    key = repr(platform)
    if key not in _platform_cache:
        captured: dict[str, Any] = {}

        async def program() -> None:
            for name, value in platform_stack.platform_program(platform).items():
                captured[name] = await value.future()

        run(program, stack=platform_stack.STACK, mocks=PlatformMocks(platform))
        _platform_cache[key] = captured
    return dict(_platform_cache[key])


def declare_platform(platform: Platform | None = None) -> list[Declared]:
    """The platform stack's resources."""
    platform = platform or load_platform()
    return run(
        lambda: platform_stack.platform_program(platform), stack=platform_stack.STACK, mocks=PlatformMocks(platform)
    )


def team_mocks(platform: Platform) -> PlatformMocks:
    return PlatformMocks(
        platform,
        stack_outputs={PLATFORM_STACK_NAME: platform_outputs(platform)},
        secret_outputs={PLATFORM_STACK_NAME: ("kubeconfig",)},
    )


def declare(
    spec: TeamSpec, platform: Platform | None = None, *, groups_domain: str = DEFAULT_GROUPS_DOMAIN
) -> list[Declared]:
    """Every resource the team's stack declares, as `pulumi up -s <team>` would (in registration order)."""
    platform = platform or load_platform()
    return run(
        lambda: team_program(spec, platform, platform_stack_name=PLATFORM_STACK_NAME, groups_domain=groups_domain),
        stack=spec.name,
        mocks=team_mocks(platform),
    )
