"""Who a signed-in user acts for. Pure: the ID token's claims and the teams' grants in, a Viewer out.

A team's people are the members of the owners' group its grant names (infra/grants/<team>.yaml
`rbac_group`, the group GKE's RBAC binds too); the platform operators' group
(infra.grants.OPERATORS_GROUP) sees every team and alone may fail a dagger over. Nothing else in
the token counts: not a username, not an e-mail domain, not a group's spelling in another case.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Viewer:
    user: str  # the provider's preferred_username (the audit trail's actor)
    subject: str  # the provider's stable id for the user (sub)
    teams: frozenset[str]  # the teams whose owners' group the user is in
    operator: bool = False  # in the platform operators' group

    def sees(self, team: str | None) -> bool:
        """May this user read and change `team`'s daggers, topics, sinks and clusters?"""
        return self.operator or (team is not None and team in self.teams)

    @property
    def actor(self) -> str:
        """How the registry records this user's actions."""
        return f"{self.user} (portal)"


class NotAMember(PermissionError):
    """The user is in no team's owners' group and is not an operator: nothing to show them."""


def team_groups(grants: Iterable) -> dict[str, str]:
    """{owners' group: team} from the teams' grants (infra.grants.Grant)."""
    out: dict[str, str] = {}
    for g in grants:
        if g.rbac_group in out:  # infra.validate refuses this; never let one group stand for two teams
            raise ValueError(f"group {g.rbac_group} is the owners' group of both {out[g.rbac_group]} and {g.team}")
        out[g.rbac_group] = g.team
    return out


def viewer(claims: Mapping, groups_to_teams: Mapping[str, str], operators_group: str) -> Viewer:
    """The Viewer of a verified ID token's claims (`groups`: plain group names, `sub`,
    `preferred_username`). NotAMember when the user may see nothing."""
    groups = claims.get("groups")
    if not isinstance(groups, list) or not all(isinstance(g, str) for g in groups):
        groups = []
    user, subject = claims.get("preferred_username"), claims.get("sub")
    if not isinstance(user, str) or not user or not isinstance(subject, str) or not subject:
        raise NotAMember("the provider's token names no user")
    teams = frozenset(groups_to_teams[g] for g in groups if g in groups_to_teams)
    operator = operators_group in groups
    if not teams and not operator:
        raise NotAMember(f"{user} is in no team's owners' group: ask your team's owners to add you")
    return Viewer(user=user, subject=subject, teams=teams, operator=operator)
