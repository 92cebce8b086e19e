"""Small value checks shared by the model and both file formats.

Every checker takes a value and returns it (possibly normalised) or raises
``ValueError`` whose text is the whole user-facing sentence (without the file
and field, which the loader prepends).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import parse_qsl

from dagger_runtime import durations, suggest
from dagger_runtime.names import check_team
from dagger_runtime.urls import carries_login

IDENTIFIER_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Kafka's own rule (kafka.common.internals.Topic): legal characters and 249 at most.
TOPIC_RE = re.compile(r"[a-zA-Z0-9._-]{1,249}")
# A protobuf message's full name, or the Java class name dagger configs use
# (which may carry `$` for nested classes).
PROTO_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*(\.[A-Za-z_][A-Za-z0-9_$]*)+")
JOB_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
SCHEMA_VERSION_RE = re.compile(r"[0-9a-f]{8,64}")
HOSTNAME_RE = re.compile(r"[A-Za-z0-9]([A-Za-z0-9-]{0,62})?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,62})?)*\.?")
CLIENT_KEY_RE = re.compile(r"[a-z][a-z0-9-]*(\.[a-z0-9-]+)*")
CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")
ENV_REF_RE = re.compile(r"\$\{([^}]*)\}")
ENV_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

# Protobuf field numbers: 1 .. 2^29-1, and 19000-19999 is reserved by protobuf itself.
MAX_FIELD_NUMBER = 536_870_911
RESERVED_FIELD_NUMBERS = range(19000, 20000)

# Kafka client settings whose values are secrets (kept out of repr, str and logs).
_SECRET_CLIENT_KEYS = {"sasl.jaas.config", "ssl.keystore.key"}
# Kafka client settings the runtime sets itself or Spark refuses.
RESERVED_CONSUMER_KEYS = {
    "bootstrap.servers": "kafka.bootstrap_servers",
    "group.id": "kafka.group_id",
    "auto.offset.reset": "kafka.auto_offset_reset",
    "enable.auto.commit": "kafka.auto_commit",
    "key.deserializer": None,
    "value.deserializer": None,
    "interceptor.classes": None,
}
RESERVED_PRODUCER_KEYS = {
    "bootstrap.servers": "sink.kafka.brokers",
    "linger.ms": "sink.kafka.linger_ms",
    "key.serializer": None,
    "value.serializer": None,
    "interceptor.classes": None,
}
# The Kafka client settings a job may pass on: an allow-list, because many others name Java classes
# to load (sasl.login.class, metric.reporters, config.providers, ssl.engine.factory.class, ...) or
# URLs and files the client reads (sasl.oauthbearer.*.url) on the team's machines.
_CONNECTION_SETTINGS = frozenset(
    {
        "security.protocol",
        "sasl.mechanism",
        "sasl.jaas.config",
        "sasl.kerberos.service.name",
        "ssl.protocol",
        "ssl.enabled.protocols",
        "ssl.endpoint.identification.algorithm",
        "ssl.cipher.suites",
        "ssl.truststore.location",
        "ssl.truststore.password",
        "ssl.truststore.type",
        "ssl.truststore.certificates",
        "ssl.keystore.location",
        "ssl.keystore.password",
        "ssl.keystore.type",
        "ssl.keystore.key",
        "ssl.keystore.certificate.chain",
        "ssl.key.password",
        "client.id",
        "client.dns.lookup",
        "request.timeout.ms",
        "connections.max.idle.ms",
        "metadata.max.age.ms",
        "reconnect.backoff.ms",
        "reconnect.backoff.max.ms",
        "retry.backoff.ms",
        "retry.backoff.max.ms",
        "receive.buffer.bytes",
        "send.buffer.bytes",
        "socket.connection.setup.timeout.ms",
        "socket.connection.setup.timeout.max.ms",
    }
)
CONSUMER_SETTINGS = _CONNECTION_SETTINGS | {
    "session.timeout.ms",
    "heartbeat.interval.ms",
    "max.poll.records",
    "max.poll.interval.ms",
    "fetch.min.bytes",
    "fetch.max.bytes",
    "fetch.max.wait.ms",
    "max.partition.fetch.bytes",
    "isolation.level",
    "check.crcs",
    "default.api.timeout.ms",
    "client.rack",
}
PRODUCER_SETTINGS = _CONNECTION_SETTINGS | {
    "acks",
    "compression.type",
    "compression.gzip.level",
    "compression.lz4.level",
    "compression.zstd.level",
    "batch.size",
    "buffer.memory",
    "max.request.size",
    "retries",
    "delivery.timeout.ms",
    "max.block.ms",
    "enable.idempotence",
    "max.in.flight.requests.per.connection",
}
# PEM text, whose lines are part of the value
_PEM_SETTINGS = frozenset({"ssl.truststore.certificates", "ssl.keystore.certificate.chain", "ssl.keystore.key"})
# The JAAS login modules sasl.jaas.config may name, for the mechanisms above; any other class
# (JndiLoginModule, a class of the job's own) is refused.
JAAS_LOGIN_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "GSSAPI": "com.sun.security.auth.module.Krb5LoginModule",
    "OAUTHBEARER": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule",
}
# one JAAS entry: a class, a control flag, options (key=value, the value quoted or a bare word), ';'
# (ASCII only: Kafka's tokenizer knows no other blanks or word characters)
_JAAS_RE = re.compile(
    r"\s*([\w.$]+)\s+(required|requisite|sufficient|optional)"
    r'((?:\s+[\w.\-]+\s*=\s*(?:"(?:[^"\\\x00-\x1f]|\\.)*"|[^\s";=/*]+))*)\s*;\s*',
    re.ASCII,
)
POSTGRES_URL_PARAMETERS = ("sslmode", "connect_timeout", "application_name", "target_session_attrs")
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "GSSAPI", "OAUTHBEARER")
STORE_TYPES = ("JKS", "PKCS12", "PEM")


def show(value: Any) -> str:
    """A value as it should appear in a message: short and quoted."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def closest(word: str, choices: Iterable[str]) -> str | None:
    """The choice a misspelling of `word` most likely is, if any is close enough."""
    close = suggest.closest(word, choices, n=1)
    return close[0] if close else None


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    close = closest(word, choices)
    return f" (did you mean {close!r}?)" if close else ""


def to_int(value: Any) -> Any:
    """Before-validator: integers only (no booleans, no '5.5'); digit strings allowed."""
    if isinstance(value, bool):
        raise ValueError(f"expected an integer, got {show(value)}")
    if isinstance(value, str):
        text = value.strip().replace("_", "")
        if not re.fullmatch(r"[+-]?\d+", text):
            raise ValueError(f"expected an integer, got {show(value)}")
        return int(text)
    if isinstance(value, float):
        if not value.is_integer():
            raise ValueError(f"expected an integer, got {show(value)}")
        return int(value)
    return value


def to_bool(value: Any) -> Any:
    """Before-validator: true/false (either case) or a real boolean; nothing else."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ValueError(f"expected true or false, got {show(value)}")


def at_least(minimum: int):
    def check(value: int) -> int:
        if value < minimum:
            raise ValueError(f"must be at least {minimum}, got {value}")
        return value

    return check


def at_most(maximum: int):
    def check(value: int) -> int:
        if value > maximum:
            shown = f"{value:,}" if value < 10**18 else f"a number of {len(str(value))} digits"
            raise ValueError(f"must be at most {maximum:,}, got {shown}")
        return value

    return check


def non_empty_text(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty")
    return value.strip()


def optional_text(value: Any) -> Any:
    """Before-validator: blank strings mean 'not given' (dagger's defaults are "")."""
    if isinstance(value, str) and not value.strip():
        return None
    return value.strip() if isinstance(value, str) else value


def sql_identifier(value: str) -> str:
    if not IDENTIFIER_RE.fullmatch(value):
        raise ValueError(
            f"expected an SQL identifier (letters, digits and _, not starting with a digit), got {show(value)}"
        )
    return value


def qualified_identifier(value: str) -> str:
    parts = value.split(".")
    if len(parts) > 2 or not all(IDENTIFIER_RE.fullmatch(p) for p in parts):
        raise ValueError(f"expected a table name like 'table' or 'schema.table', got {show(value)}")
    return value


def kafka_topic(value: str) -> str:
    if value in (".", ".."):
        raise ValueError(f"{show(value)} is not a valid Kafka topic name")
    if not TOPIC_RE.fullmatch(value):
        if len(value) > 249:
            raise ValueError(f"Kafka topic names are at most 249 characters, got {len(value)}")
        raise ValueError(f"invalid Kafka topic name {show(value)}: only letters, digits, '.', '_' and '-' are allowed")
    return value


def topic_pattern(value: str) -> str:
    value = value.strip()
    if not value:
        raise ValueError("must not be empty")
    try:
        re.compile(value)
    except re.error as exc:
        raise ValueError(f"not a valid regular expression: {exc}") from None
    return value


def proto_name(value: str) -> str:
    value = value.strip()
    if not PROTO_NAME_RE.fullmatch(value):
        raise ValueError(
            "expected a fully qualified protobuf message name like 'gojek.esb.booking.BookingLogMessage',"
            f" got {show(value)}"
        )
    return value


def field_number(value: int) -> int:
    if not 1 <= value <= MAX_FIELD_NUMBER:
        raise ValueError(f"a protobuf field number is between 1 and {MAX_FIELD_NUMBER}, got {value}")
    if value in RESERVED_FIELD_NUMBERS:
        raise ValueError(f"protobuf field numbers 19000-19999 are reserved, got {value}")
    return value


def field_name(value: str) -> str:
    if not IDENTIFIER_RE.fullmatch(value):
        raise ValueError(f"expected a field name (letters, digits and _), got {show(value)}")
    return value


def job_name(value: str) -> str:
    if not JOB_NAME_RE.fullmatch(value):
        raise ValueError(
            f"a job name is 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit, got {show(value)}"
        )
    return value


def team_name(value: str) -> str:
    # the one rule for team names, shared with the platform's specs (infra/) and the lab
    return check_team(value)


def schema_version(value: Any) -> Any:
    if isinstance(value, int) and not isinstance(value, bool):
        raise ValueError(f"expected a hex digest as text, got the number {value}; quote it")
    if isinstance(value, str):
        value = value.strip().lower()
        if not SCHEMA_VERSION_RE.fullmatch(value):
            raise ValueError(f"expected a descriptor-set digest (8 to 64 hex digits), got {show(value)}")
    return value


def _host_port(entry: str) -> str | None:
    """Why ``entry`` is not host:port, or None when it is."""
    if entry.startswith("["):
        host, sep, port = entry[1:].partition("]:")
        if not sep:
            return "expected [ipv6]:port"
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            return f"{show(host)} is not an IPv6 address"
    else:
        host, sep, port = entry.rpartition(":")
        if not sep or not host:
            return "expected host:port"
        if not HOSTNAME_RE.fullmatch(host):
            return f"{show(host)} is not a host name or address"
    if not port.isdigit() or not 1 <= int(port) <= 65535:
        return f"port {show(port)} is not a number between 1 and 65535"
    return None


def bootstrap_servers(value: Any) -> Any:
    """Before-validator: 'h1:9092,h2:9092' or a list of host:port; returns the comma-joined form."""
    if isinstance(value, (list, tuple)):
        if not all(isinstance(v, str) for v in value):
            raise ValueError(f"expected host:port entries, got {show(value)}")
        entries = [v.strip() for v in value]
    elif isinstance(value, str):
        entries = [v.strip() for v in value.split(",")]
    else:
        return value
    if not any(entries):
        raise ValueError("expected a comma-separated list of host:port, got nothing")
    bad = []
    for entry in entries:
        why = _host_port(entry) if entry else "empty entry"
        if why:
            bad.append(f"{show(entry)}: {why}")
    if bad:
        raise ValueError("expected a comma-separated list of host:port; " + "; ".join(bad))
    return ",".join(entries)


def url_with_scheme(schemes: tuple[str, ...]):
    def check(value: str) -> str:
        value = value.strip()
        match = re.fullmatch(r"([A-Za-z][A-Za-z0-9+.-]*)://([^/?#\s]*)(\S*)", value)
        if not match or match.group(1).lower() not in schemes or not match.group(2):
            starts = " or ".join(s + "://" for s in schemes)
            raise ValueError(f"expected a URL starting with {starts}, got {show(value)}")
        if ":" in match.group(2).rpartition("@")[0]:
            raise ValueError("the URL must not contain a password; give it in the password field")
        # the sink appends its own path and query: a query, a fragment or user info in the URL
        # would redirect the request (another database, another endpoint) or carry credentials
        if "@" in match.group(2) or re.search(r"[?#%\x00-\x1f\x7f]", match.group(3)):
            raise ValueError(
                f"expected scheme://host[:port][/path] with no user, query, fragment or escapes, got {show(value)}"
            )
        return value

    return check


def measurement(value: str) -> str:
    """An InfluxDB measurement name: a line starting with '#' is a comment, so every point would be dropped."""
    value = non_empty_text(value)
    if value.startswith("#") or any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise ValueError(f"a measurement name neither starts with '#' nor has control characters, got {show(value)}")
    return value


def postgres_url(value: str) -> str:
    value = value.strip()
    bare = value[len("jdbc:") :] if value.startswith("jdbc:") else value
    match = re.fullmatch(r"(postgres|postgresql)://([^/?#\s]*)/([^?#\s]+)(\?\S*)?", bare)
    if not match or not match.group(2):
        raise ValueError(
            f"expected a URL like postgresql://host:5432/database (or jdbc:postgresql://...), got {show(value)}"
        )
    if ":" in match.group(2).rpartition("@")[0] or re.search(r"[?&]password=", match.group(4) or ""):
        raise ValueError("the URL must not contain a password; give it in the password field")

    from psycopg.conninfo import conninfo_to_dict

    try:
        parts = conninfo_to_dict(bare)
    except Exception as e:  # noqa: BLE001 - psycopg's parse error says what is wrong
        raise ValueError(f"not a PostgreSQL URL: {e}") from None
    # no host means libpq's local socket; a host starting with '/' is a socket directory
    hosts = str(parts.get("host") or "").split(",")
    if not all(h and not h.startswith("/") for h in hosts):
        raise ValueError(
            f"the URL must name a network host (a local socket directory is not allowed), got {show(value)}"
        )
    for key, _ in parse_qsl((match.group(4) or "?")[1:], keep_blank_values=True):
        # libpq reads files and services named in the URL (passfile, sslkey, service...): only these
        if key not in POSTGRES_URL_PARAMETERS:
            raise ValueError(f"the URL parameter {key!r} is not allowed; allowed: {', '.join(POSTGRES_URL_PARAMETERS)}")
    return value


def stencil_url(value: str) -> str:
    value = value.strip()
    if not re.fullmatch(r"(https?|file|gs|s3)://\S+", value) and not value.startswith("/"):
        raise ValueError(f"expected an http(s)://, file://, gs:// or s3:// URL or an absolute path, got {show(value)}")
    if carries_login(value):
        # said without the value: it holds a login
        raise ValueError("a schema URL may not carry a login (user:password@...): give the server's address only")
    return value


def checkpoint_location(value: str) -> str:
    """A directory for Spark's checkpoints: a local path, file://, or gs://bucket/path in the cloud.
    Other schemes would hand the job's state to a file system nobody provisioned for it."""
    value = value.strip()
    if any(ord(c) < 32 for c in value):
        raise ValueError(f"a checkpoint location has no control characters, got {show(value)}")
    if re.fullmatch(r"(file:/|gs://[a-z0-9][a-z0-9._-]{1,220}(/|$))\S*", value) or (
        value and not re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", value)
    ):
        return value
    raise ValueError(f"expected a local directory, a file:// URL or gs://bucket/path, got {show(value)}")


def parse_duration_ms(value: Any) -> int:
    """'500ms', '60s', '5m', '1h30m', '1d' -> milliseconds; a bare number is refused (which unit?)."""
    return durations.milliseconds(value)


def is_secret_client_key(key: str) -> bool:
    return key in _SECRET_CLIENT_KEYS or "password" in key or "secret" in key


def client_key(value: str) -> str:
    if not CLIENT_KEY_RE.fullmatch(value):
        raise ValueError(f"expected a Kafka client setting name like 'security.protocol', got {show(value)}")
    return value


def check_client_settings(
    settings: Mapping[str, str], reserved: Mapping[str, str | None], allowed: frozenset[str] = CONSUMER_SETTINGS
) -> list[tuple[str, str]]:
    """Problems with Kafka client settings as (key, message) pairs."""
    problems: list[tuple[str, str]] = []
    protocol = settings.get("security.protocol", "PLAINTEXT")
    for key, value in settings.items():
        if key in reserved:
            instead = reserved[key]
            why = f"set with {instead} instead" if instead else "is set by the runtime and cannot be overridden"
            problems.append((key, why))
        elif key not in allowed:
            close = suggest.closest(key, allowed, n=1)
            hint = (
                f"; did you mean {close[0]!r}?"
                if close
                else (
                    "; security, TLS, timeout and size settings are passed on, not settings that name classes, "
                    "files of configuration or URLs"
                )
            )
            problems.append((key, f"is not a Kafka client setting a dagger passes on{hint}"))
        elif CONTROL_RE.search(value.replace("\n", "") if key in _PEM_SETTINGS else value):
            problems.append((key, "must not contain control characters"))
        elif key == "security.protocol" and value not in SECURITY_PROTOCOLS:
            problems.append((key, f"must be one of {', '.join(SECURITY_PROTOCOLS)}, got {show(value)}"))
        elif key == "sasl.mechanism" and value not in SASL_MECHANISMS:
            problems.append((key, f"must be one of {', '.join(SASL_MECHANISMS)}, got {show(value)}"))
        elif key in ("ssl.keystore.type", "ssl.truststore.type") and value not in STORE_TYPES:
            problems.append((key, f"must be one of {', '.join(STORE_TYPES)}, got {show(value)}"))
        elif key == "sasl.jaas.config":
            problems += [(key, p) for p in _jaas_problems(value, settings.get("sasl.mechanism", "GSSAPI"))]
    if not protocol.startswith("SASL_"):
        for key in settings:
            if key.startswith("sasl."):
                why = f"has no effect unless security.protocol is SASL_PLAINTEXT or SASL_SSL (it is {protocol})"
                problems.append((key, why))
    return problems


def _jaas_problems(value: str, mechanism: str) -> list[str]:
    """sasl.jaas.config must be one JAAS entry whose login module is the mechanism's own. The value
    is a secret: messages never quote it."""
    match = _JAAS_RE.fullmatch(value)
    if not match:
        return ["must be one JAAS entry: '<LoginModule class> required key=\"value\" ...;'"]
    module = match.group(1)
    want = JAAS_LOGIN_MODULES.get(mechanism)
    if want and module != want:
        shown = module if module in JAAS_LOGIN_MODULES.values() else "another class"
        return [f"sasl.mechanism {mechanism} takes {want}, not {shown}"]
    return []


def resolve_env(value: str, env: Mapping[str, str]) -> tuple[str, list[str]]:
    """Replace ``${NAME}`` with the environment's value; ``$${`` is a literal ``${``.

    Returns the resolved text and a message per missing or malformed reference.
    """
    errors: list[str] = []

    def repl(match: re.Match[str]) -> str:
        name = match.group(1)
        if not ENV_NAME_RE.fullmatch(name):
            errors.append(f"{show('${' + name + '}')} is not a valid environment variable reference")
            return match.group(0)
        if name not in env:
            errors.append(f"environment variable {name} is not set (referenced as ${{{name}}})")
            return match.group(0)
        return env[name]

    pieces = value.split("$${")
    resolved = "${".join(ENV_REF_RE.sub(repl, piece) for piece in pieces)
    return resolved, errors
