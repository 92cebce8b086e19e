"""Serves the platform's rules to the Pulumi CLI: `pulumi preview -s <team> --policy-pack infra/policy`.

Constructing the PolicyPack starts the analyzer the CLI talks to, so this file only wires: the
rules live in rules.py (tested by `make test` without the CLI), the adapters in pack.py.
"""

import sys
from pathlib import Path

# The CLI runs this file from infra/policy; the rules import the repository's `infra` package.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from pulumi_policy import EnforcementLevel, PolicyPack  # noqa: E402

from infra.policy.pack import PACK_NAME, load_teams, policies  # noqa: E402

PolicyPack(
    name=PACK_NAME,
    enforcement_level=EnforcementLevel.MANDATORY,
    policies=policies(load_teams()),
)
