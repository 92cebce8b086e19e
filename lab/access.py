"""Logging in to the lab's Kafka clusters as one of their principals.

The kafka role (`kafka_security: sasl`) gives each principal a generated password, kept 0600 in
`<lab>/secrets/kafka/<cluster>/<principal>.password`, and a client settings file next to it for
Kafka's own tools. The platform's tools (the demo's feeders, the tests' setup) log in as `admin`;
a team's daggers as `dagger-<team>`, whose password reaches the driver as the team's secret
DAGGER_SECRET_<TEAM>__KAFKA_PASSWORD (the only kind of variable `dagger deploy` hands on).
"""
from __future__ import annotations

import re
from pathlib import Path

from .cli import lab_dir

ADMIN = "admin"
SCRAM = "SCRAM-SHA-512"
PROTOCOL = "SASL_PLAINTEXT"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


class NoCredential(LookupError):
    """The lab has no password for this principal (not a principal, or the lab is not up)."""


def _secret(principal: str, cluster: str, suffix: str, lab: Path | None) -> Path:
    if not (_NAME.fullmatch(principal) and _NAME.fullmatch(cluster)):
        raise ValueError(f"not a principal or cluster name: {principal!r} on {cluster!r}")
    return (lab or lab_dir()) / "secrets" / "kafka" / cluster / f"{principal}{suffix}"


def password(principal: str, cluster: str = "primary", lab: Path | None = None) -> str:
    """The principal's password; `lab` defaults to DAGGER_LAB_DIR (or <repo>/.lab)."""
    path = _secret(principal, cluster, ".password", lab)
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        raise NoCredential(f"no Kafka password for {principal} on the lab's {cluster} cluster ({path}): "
                           "is it in the cluster's kafka_users, and is the lab up (`make lab-up`)?") from None


def client_properties(principal: str, cluster: str = "primary", lab: Path | None = None) -> Path:
    """The principal's client settings file (for Kafka's tools: --command-config, --consumer.config)."""
    path = _secret(principal, cluster, ".properties", lab)
    if not path.is_file():
        raise NoCredential(f"no client settings for {principal} on the lab's {cluster} cluster ({path})")
    return path


def kafka_python(principal: str = ADMIN, cluster: str = "primary", lab: Path | None = None) -> dict:
    """kafka-python client arguments that log in as `principal`."""
    return {"security_protocol": PROTOCOL, "sasl_mechanism": SCRAM, "sasl_plain_username": principal,
            "sasl_plain_password": password(principal, cluster, lab)}


def team_principal(team: str) -> str:
    return f"dagger-{team}"


def team_secret_env(team: str) -> str:
    """The variable a team's dagger specs name for their Kafka password."""
    from dagger_runtime.lifecycle.spark import secret_prefix

    return secret_prefix(team) + "KAFKA_PASSWORD"


def team_client(team: str) -> dict:
    """A dagger spec's Kafka `client` settings for the team, its password as a ${VAR} reference."""
    jaas = (f'org.apache.kafka.common.security.scram.ScramLoginModule required '
            f'username="{team_principal(team)}" password="${{{team_secret_env(team)}}}";')
    return {"security.protocol": PROTOCOL, "sasl.mechanism": SCRAM, "sasl.jaas.config": jaas}


def team_env(team: str, cluster: str = "primary", lab: Path | None = None) -> dict[str, str]:
    """The environment `dagger deploy` needs for the team's Kafka password."""
    return {team_secret_env(team): password(team_principal(team), cluster, lab)}
