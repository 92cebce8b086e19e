"""The rules of rules.py as CrossGuard policies (all MANDATORY).

Each policy hands the engine's view of a resource (type, inputs, URN) to the pure rule and reports
what it returns. The stack's team is the stack's name, read from the URN (`pulumi up -s fraud`);
what the platform knows about every team (the registry: each team's exact identities and range)
comes from infra/teams/*.yaml, and its owners' group from infra/grants/*.yaml.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
    proxy,
)

from . import rules

PACK_NAME = "daggers-platform"
_UNKNOWN_SENTINELS = frozenset(
    {
        proxy.UNKNOWN_BOOLEAN_VALUE,
        proxy.UNKNOWN_NUMBER_VALUE,
        proxy.UNKNOWN_STRING_VALUE,
        proxy.UNKNOWN_ARRAY_VALUE,
        proxy.UNKNOWN_ASSET_VALUE,
        proxy.UNKNOWN_ARCHIVE_VALUE,
        proxy.UNKNOWN_OBJECT_VALUE,
    }
)


def plain(value: Any) -> Any:
    """The engine's props (proxies that raise on unknown values) as plain data, unknowns as UNKNOWN."""
    if isinstance(value, str):
        return rules.UNKNOWN if value in _UNKNOWN_SENTINELS else value
    if isinstance(value, Mapping):
        target = value["__target"] if isinstance(value, proxy._DictProxy) else value  # noqa: SLF001
        return {k: plain(v) for k, v in target.items()}
    if isinstance(value, Sequence) and not isinstance(value, bytes):
        target = value["__target"] if isinstance(value, proxy._ListProxy) else value  # noqa: SLF001
        return [plain(v) for v in target]
    return value


def load_teams(teams_dir: Path | None = None, grants_dir: Path | None = None) -> rules.Teams:
    """Every team, with the owners' group of its grant. A spec that does not load raises
    spec.SpecError naming it, so the pack does not start: a registry missing a team would let
    another stack name that team's identities unseen (fail closed). A team without a grant has no
    owners' group here, so no RoleBinding of its stack may name a group."""
    from infra import grants, spec

    platform = spec.load_platform()
    loaded = spec.load_all(teams_dir or spec.TEAMS_DIR, platform)
    granted, _ = grants.load_all(grants_dir or grants.GRANTS_DIR)
    return rules.Teams.from_specs(loaded, platform.project, {t: g.rbac_group for t, g in granted.items()})


def _resource_policy(rule: rules.Rule, teams: rules.Teams) -> ResourceValidationPolicy:
    def validate(args: ResourceValidationArgs, report_violation) -> None:
        props = plain(args.props)
        for v in rule.check(args.resource_type, props, args.urn, rules.stack_of(args.urn), teams):
            report_violation(str(v), v.urn)

    return ResourceValidationPolicy(
        name=rule.name, description=rule.description, validate=validate, enforcement_level=EnforcementLevel.MANDATORY
    )


def _stack_policy(rule: rules.Rule, teams: rules.Teams) -> StackValidationPolicy:
    def validate(args: StackValidationArgs, report_violation) -> None:
        resources = [rules.Resource(r.resource_type, r.urn, plain(r.props)) for r in args.resources]
        team = rules.stack_of(resources[0].urn) if resources else ""
        for v in rule.check(resources, team, teams):
            report_violation(str(v), v.urn)

    return StackValidationPolicy(
        name=rule.name, description=rule.description, validate=validate, enforcement_level=EnforcementLevel.MANDATORY
    )


def policies(teams: rules.Teams) -> list:
    return [_resource_policy(r, teams) for r in rules.RESOURCE_RULES] + [
        _stack_policy(r, teams) for r in rules.STACK_RULES
    ]
