"""The platform's rules for a team's identities, as a dagger written in the portal needs them:
every server knows a team as `dagger-<team>` (Kafka principal, PostgreSQL role, InfluxDB user), its
consumer groups lie under `dagger-<team>--`, its database is named after it, and its passwords
reach a driver only as DAGGER_SECRET_<TEAM>__* references. One place states them (lab.access,
which the lab's roles and the CLI's examples follow too); this gathers what the portal uses."""

from __future__ import annotations

import os
from types import SimpleNamespace

from dagger_runtime.errors import DaggerError
from lab import access


def kafka_login(team: str) -> dict:
    """kafka-python's login as the team's principal, its password from the portal's environment
    (portal.team_secrets), for reading the team's topics (the preview)."""
    name = access.team_secret_env(team)
    if not os.environ.get(name):
        raise DaggerError(f"the portal holds no Kafka password for team {team} ({name}; --team-secrets)")
    return {
        "security_protocol": access.PROTOCOL,
        "sasl_mechanism": access.SCRAM,
        "sasl_plain_username": access.team_principal(team),
        "sasl_plain_password": os.environ[name],
    }


RULES = SimpleNamespace(
    consumer_group=access.consumer_group,
    team_client=access.team_client,
    influx_sink=access.team_influx_sink,
    postgres_sink=access.team_postgres_sink,
    kafka_login=kafka_login,
)
