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

from dagger_runtime.names import check_team

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
        raise NoCredential(
            f"no Kafka password for {principal} on the lab's {cluster} cluster ({path}): "
            "is it in the cluster's kafka_users, and is the lab up (`make lab-up`)?"
        ) from None


def client_properties(principal: str, cluster: str = "primary", lab: Path | None = None) -> Path:
    """The principal's client settings file (for Kafka's tools: --command-config, --consumer.config)."""
    path = _secret(principal, cluster, ".properties", lab)
    if not path.is_file():
        raise NoCredential(f"no client settings for {principal} on the lab's {cluster} cluster ({path})")
    return path


def kafka_python(principal: str = ADMIN, cluster: str = "primary", lab: Path | None = None) -> dict:
    """kafka-python client arguments that log in as `principal`."""
    return {
        "security_protocol": PROTOCOL,
        "sasl_mechanism": SCRAM,
        "sasl_plain_username": principal,
        "sasl_plain_password": password(principal, cluster, lab),
    }


def team_principal(team: str) -> str:
    return f"dagger-{team}"


def consumer_group(team: str, dagger: str) -> str:
    """A team's dagger's consumer group, inside the prefix its ACL allows (infra's one rule:
    dagger-<team>--<dagger>, which no other team's prefix covers)."""
    from infra.kafka_access import consumer_group as named

    return named(team, dagger)


def _secret_env(team: str, name: str) -> str:
    """DAGGER_SECRET_<TEAM>__<NAME>: the only kind of variable `dagger deploy` hands a driver."""
    from dagger_runtime.lifecycle.spark import secret_prefix

    return secret_prefix(team) + name


def team_secret_env(team: str) -> str:
    """The variable a team's dagger specs name for their Kafka password."""
    return _secret_env(team, "KAFKA_PASSWORD")


def team_client(team: str) -> dict:
    """A dagger spec's Kafka `client` settings for the team, its password as a ${VAR} reference."""
    jaas = (
        f"org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="{team_principal(team)}" password="${{{team_secret_env(team)}}}";'
    )
    return {"security.protocol": PROTOCOL, "sasl.mechanism": SCRAM, "sasl.jaas.config": jaas}


def team_env(team: str, cluster: str = "primary", lab: Path | None = None) -> dict[str, str]:
    """The environment `dagger deploy` needs for the team's Kafka password."""
    return {team_secret_env(team): password(team_principal(team), cluster, lab)}


# -- the sinks' own identities ------------------------------------------------------------------
# A team's sink logs in as dagger-<team> (the name of its Kafka principal) to the database named
# after the team, on PostgreSQL and on InfluxDB alike (the lab's group_vars postgresql.yml and
# influxdb.yml declare them so). The roles generate each password once, 0600, under
# <lab>/secrets/postgresql/<role>.password and <lab>/secrets/influxdb/<user>.password; a team's
# reaches its driver only as DAGGER_SECRET_<TEAM>__PG_PASSWORD / __INFLUX_PASSWORD.
INFLUX_ADMIN = "admin"
REGISTRY_ROLE = "daggers"


def _team(team: str) -> str:
    return check_team(team)


def _sink_path(server: str, name: str, lab: Path | None) -> Path:
    if not _NAME.fullmatch(name):
        raise ValueError(f"not a {server} user name: {name!r}")
    return (lab or lab_dir()) / "secrets" / server / f"{name}.password"


def _sink_secret(server: str, name: str, lab: Path | None) -> str:
    path = _sink_path(server, name, lab)
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        raise NoCredential(
            f"no {server} password for {name} ({path}): is it declared in the lab's "
            f"group_vars/{server}.yml, and is the lab up (`make lab-up`)?"
        ) from None


def sink_user(team: str) -> str:
    """The team's login on the sinks' servers (PostgreSQL role, InfluxDB user): its Kafka principal's name."""
    return team_principal(_team(team))


def sink_database(team: str) -> str:
    """The team's own database on PostgreSQL and on InfluxDB."""
    return _team(team)


def postgres_password(role: str, lab: Path | None = None) -> str:
    """A PostgreSQL login role's password (a team's sink role, or the registry's `daggers`)."""
    return _sink_secret("postgresql", role, lab)


def influx_password(user: str, lab: Path | None = None) -> str:
    """An InfluxDB user's password (a team's sink user, or the platform's `admin`)."""
    return _sink_secret("influxdb", user, lab)


def pg_secret_env(team: str) -> str:
    """The variable a team's dagger specs name for their PostgreSQL password."""
    return _secret_env(_team(team), "PG_PASSWORD")


def influx_secret_env(team: str) -> str:
    """The variable a team's dagger specs name for their InfluxDB password."""
    return _secret_env(_team(team), "INFLUX_PASSWORD")


def team_postgres_sink(team: str, host: str, port: int, table: str) -> dict:
    """A dagger spec's `postgres` sink settings for the team: its role, its database, its password
    as a ${VAR} reference."""
    return {
        "url": f"postgresql://{host}:{int(port)}/{sink_database(team)}",
        "table": table,
        "user": sink_user(team),
        "password": "${" + pg_secret_env(team) + "}",
    }


def team_influx_sink(team: str, url: str, measurement: str) -> dict:
    """A dagger spec's `influx` sink settings for the team: its user, its database, its password as
    a ${VAR} reference."""
    return {
        "url": url,
        "db_name": sink_database(team),
        "measurement_name": measurement,
        "username": sink_user(team),
        "password": "${" + influx_secret_env(team) + "}",
    }


def team_sink_env(team: str, lab: Path | None = None, *, postgres: bool = True, influx: bool = True) -> dict[str, str]:
    """The environment `dagger deploy` needs for the team's sink passwords."""
    env = {}
    if postgres:
        env[pg_secret_env(team)] = postgres_password(sink_user(team), lab)
    if influx:
        env[influx_secret_env(team)] = influx_password(sink_user(team), lab)
    return env


# -- the metrics servers: the platform's own login only -----------------------------------------
# Prometheus holds every team's daggers' metrics and answers one login, the platform's (basic auth
# from its --web.config.file, which keeps only a bcrypt hash); the prometheus role generates its
# password once, 0600, under <lab>/secrets/prometheus/<user>.password. No team holds it: a team
# sees its metrics through the platform's tools, not this server.
METRICS_USER = "platform"


def prometheus_password(lab: Path | None = None) -> str:
    """The platform's password on the lab's Prometheus."""
    return _sink_secret("prometheus", METRICS_USER, lab)


def prometheus_auth(lab: Path | None = None) -> tuple[str, str]:
    """(user, password) for HTTP basic auth on the lab's Prometheus."""
    return METRICS_USER, prometheus_password(lab)


# -- the sign-in (Keycloak, realm `daggers`): a user per team and the platform's operator ----------
# The keycloak role generates each user's password and the portal's client secret once, 0600,
# under <lab>/secrets/keycloak/. A team's people sign in as <team>-analyst (in the team's owners'
# group of its grant); `operator` is in the platform operators' group.
REALM = "daggers"
PORTAL_CLIENT = "dagger-portal"
OPERATOR = "operator"


def analyst(team: str) -> str:
    """The lab's user who signs in for `team`."""
    return f"{_team(team)}-analyst"


def sign_in_password(user: str, lab: Path | None = None) -> str:
    """A sign-in user's password on the lab's Keycloak."""
    if not _NAME.fullmatch(user):
        raise ValueError(f"not a user name: {user!r}")
    path = (lab or lab_dir()) / "secrets" / "keycloak" / "users" / f"{user}.password"
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        raise NoCredential(
            f"no sign-in password for {user} ({path}): is it a user of the keycloak role, and is the lab up?"
        ) from None


def portal_client_secret(lab: Path | None = None) -> str:
    """The portal's OpenID Connect client secret on the lab's Keycloak."""
    path = (lab or lab_dir()) / "secrets" / "keycloak" / f"{PORTAL_CLIENT}.secret"
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        raise NoCredential(f"no client secret for {PORTAL_CLIENT} ({path}): is the lab up?") from None


def team_secret_files(team: str, lab: Path | None = None) -> dict[str, Path]:
    """{variable: file} of the team's Kafka, PostgreSQL and InfluxDB passwords, as a deploy
    tool (the portal) is given them."""
    user = sink_user(team)
    return {
        team_secret_env(team): _secret(team_principal(team), "primary", ".password", lab),
        pg_secret_env(team): _sink_path("postgresql", user, lab),
        influx_secret_env(team): _sink_path("influxdb", user, lab),
    }
