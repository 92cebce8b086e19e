"""The Pulumi program of project `daggers` (Pulumi.yaml): reads config, declares one stack, exports.

    pulumi up -s platform        the shared VPC and GKE cluster (platform_stack.py)
    pulumi up -s <team>          a team's isolated platform (team.py), from infra/teams/<team>.yaml

Config (read here only, and passed down):
    daggers:teamSpec        the team's spec, relative to infra/ (default: teams/<stack>.yaml)
    daggers:platformStack   the platform stack to read (default: <organization>/daggers/platform)
    daggers:groupsDomain    domain of the owners' Google groups (Kubernetes RBAC), default daggers.dev
"""

import sys
from pathlib import Path

import pulumi

INFRA = Path(__file__).resolve().parent
if str(INFRA.parent) not in sys.path:  # `infra` as a package, however Pulumi starts us
    sys.path.insert(0, str(INFRA.parent))

from infra import platform_stack  # noqa: E402
from infra.spec import SpecError, load, load_platform  # noqa: E402
from infra.team import DEFAULT_GROUPS_DOMAIN, team_program  # noqa: E402


def main() -> None:
    config = pulumi.Config("daggers")
    stack = pulumi.get_stack()
    platform = load_platform()
    if stack == platform_stack.STACK:
        outputs = platform_stack.platform_program(platform)
    else:
        spec_path = INFRA / (config.get("teamSpec") or f"teams/{stack}.yaml")
        try:
            spec = load(spec_path, platform)
        except SpecError as e:
            raise pulumi.RunError(str(e)) from None
        if spec.name != stack:
            raise pulumi.RunError(
                f"stack {stack!r} points at team {spec.name!r} ({spec.source}): a team's stack is named after the team"
            )
        default_ref = f"{pulumi.get_organization()}/{pulumi.get_project()}/{platform_stack.STACK}"
        team = team_program(
            spec,
            platform,
            platform_stack_name=config.get("platformStack") or default_ref,
            groups_domain=config.get("groupsDomain") or DEFAULT_GROUPS_DOMAIN,
        )
        outputs = team.outputs()
    for name, value in outputs.items():
        pulumi.export(name, value)


def _outside_pulumi() -> int:
    """`python -m infra` run by hand: this module is a Pulumi program, which only Pulumi's engine
    (or its mocks, in the tests) can run. Say so instead of failing on a stack named `stack`."""
    print(__doc__)
    if sys.argv[1:2] in (["-h"], ["--help"]):
        return 0
    print(
        "python -m infra: this is the Pulumi program of project `daggers`; run it with `pulumi preview` or "
        "`pulumi up -s <stack>` in infra/ (`dagger team plan SPEC` shows a team's stack without a cloud)",
        file=sys.stderr,
    )
    return 2


if pulumi.runtime.settings.get_monitor() is None:
    sys.exit(_outside_pulumi())
main()
