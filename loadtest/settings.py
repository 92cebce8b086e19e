"""Command-line settings the loadtest commands share: Kafka client settings, logins on the lab,
the descriptor set and message, hints."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from dagger_runtime.suggest import closest

__all__ = [
    "add_bootstrap_argument",
    "add_client_arguments",
    "add_schema_arguments",
    "client_kwargs",
    "descriptor_set",
    "load_json_or_file",
    "SettingsError",
]


class SettingsError(ValueError):
    """A command-line setting that cannot be used, with what and where."""


def add_bootstrap_argument(parser: argparse.ArgumentParser) -> None:
    """Kafka's address as Kafka's own tools take it (kafka-console-producer.sh --bootstrap-server)."""
    parser.add_argument(
        "-b",
        "--bootstrap-server",
        "--bootstrap-servers",
        dest="bootstrap_servers",
        required=True,
        metavar="HOST:PORT[,HOST:PORT...]",
        help="the Kafka cluster to connect to",
    )


def add_client_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("Kafka client")
    g.add_argument(
        "--client",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a kafka-python setting, repeatable (e.g. security_protocol=SASL_PLAINTEXT, "
        "linger_ms=20); VALUE is read as JSON when it parses, else as text",
    )
    g.add_argument(
        "--lab-user",
        metavar="PRINCIPAL",
        help="log in to the lab's Kafka as PRINCIPAL (SASL/SCRAM, password from the lab's secrets)",
    )
    g.add_argument("--lab-cluster", default="primary", help="the lab cluster of --lab-user (default primary)")


def add_schema_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("schema")
    g.add_argument(
        "--schema-urls",
        metavar="URLS",
        help="comma-separated descriptor set URLs (a stencil registry); default: protos/descriptors",
    )
    g.add_argument("--schema-version", metavar="HEX", help="the descriptor set version to use (>= 8 hex digits)")


def client_kwargs(args: argparse.Namespace, kind: str) -> dict[str, Any]:
    """kafka-python keyword arguments from --client and --lab-user; `kind` is producer or consumer,
    whose settings the keys are checked against."""
    from kafka import KafkaConsumer, KafkaProducer

    known = set((KafkaProducer if kind == "producer" else KafkaConsumer).DEFAULT_CONFIG)
    out: dict[str, Any] = {}
    if getattr(args, "lab_user", None):
        from lab import access

        try:
            out.update(access.kafka_python(args.lab_user, args.lab_cluster))
        except access.NoCredential as e:
            raise SettingsError(str(e)) from None
    for item in args.client or []:
        key, sep, raw = item.partition("=")
        key = key.strip().replace("-", "_").replace(".", "_")
        if not sep or not key:
            raise SettingsError(f"--client {item!r}: want KEY=VALUE")
        if key not in known:
            close = closest(key, known)
            raise SettingsError(
                f"--client {item!r}: {key} is not a kafka-python {kind} setting"
                + (f"; did you mean {' or '.join(close)}?" if close else "")
            )
        try:
            out[key] = json.loads(raw)
        except ValueError:
            out[key] = raw
    return out


def descriptor_set(args: argparse.Namespace):
    from protos import registry

    return registry.load(getattr(args, "schema_urls", None), getattr(args, "schema_version", None))


def load_json_or_file(value: str | None, what: str) -> Any:
    """A JSON value given inline ({...}) or as a .json/.yaml file path; None stays None."""
    if value is None or value == "":
        return None
    text = value.strip()
    if text[:1] in "{[":
        try:
            return json.loads(text)
        except ValueError as e:
            raise SettingsError(f"{what}: not valid JSON: {e}") from None
    path = Path(value)
    try:
        body = path.read_text()
    except OSError as e:
        raise SettingsError(f"{what}: {value!r} is neither inline JSON nor a readable file ({e.strerror})") from None
    if path.suffix in (".yaml", ".yml"):
        import yaml

        try:
            return yaml.safe_load(body)
        except yaml.YAMLError as e:
            raise SettingsError(f"{what}: {path} is not valid YAML: {e}") from None
    try:
        return json.loads(body)
    except ValueError as e:
        raise SettingsError(f"{what}: {path} is not valid JSON: {e}") from None
