"""Spark's own authentication for a team's cluster: the spark-defaults.conf settings, as data.

The same settings as the lab's Ansible role (playbooks/roles/spark/vars/main.yml, spark_defaults
and spark_auth_defaults): RPC authenticated with a secret per cluster and encrypted with no
unencrypted fallback, the REST submission server and the UIs' kill buttons off, the UIs behind
Spark's JWSFilter with a key per cluster. SparkCluster writes them on GKE; the policy pack
(infra/policy/rules.py) refuses a Spark workload or config without them. No Pulumi import here:
the pack imports this module.
"""

from __future__ import annotations

from collections.abc import Mapping

import javaproperties

SECRET_KEY = "spark.authenticate.secret"
UI_FILTER = "org.apache.spark.ui.JWSFilter"
UI_KEY = f"spark.{UI_FILTER}.param.secretKey"
# the file's name in the Kubernetes Secret (and where Spark is pointed at it: --properties-file)
CONF_FILE = "spark-defaults.conf"

# What every Spark master and worker runs with, besides the two secrets.
REQUIRED: dict[str, str] = {
    "spark.authenticate": "true",
    "spark.network.crypto.enabled": "true",
    # no fallback to SASL DIGEST-MD5 (authenticated, not encrypted) for a client without encryption
    "spark.network.crypto.saslFallback": "false",
    "spark.master.rest.enabled": "false",
    "spark.ui.killEnabled": "false",
    "spark.ui.filters": UI_FILTER,
}
# Generated once per cluster, letters and digits only (as the role's password lookup): the UI key
# is then BASE64URL text of 48 bytes (384 bits), which JWSFilter decodes into its HS256 key.
SECRET_LENGTH = 48
UI_KEY_LENGTH = 64
MIN_SECRET_LENGTH = 32


def spark_defaults(secret: str, ui_key: str) -> dict[str, str]:
    """The settings of one cluster, its secrets included."""
    return {**REQUIRED, SECRET_KEY: secret, UI_KEY: ui_key}


def spark_defaults_conf(secret: str, ui_key: str) -> str:
    """spark-defaults.conf, written by javaproperties: Spark reads it with java.util.Properties, so
    every value is escaped as that reader expects (no value can add a line or a setting)."""
    return javaproperties.dumps(
        spark_defaults(secret, ui_key),
        timestamp=False,
        comments=" Spark's authentication, encryption and UI filter (managed by daggers infra)",
    )


def auth_problems(settings: Mapping[str, str]) -> list[str]:
    """What a Spark config lacks of REQUIRED and the two secrets, one line each. Names the keys
    only, never a value (the config holds secrets)."""
    out = [
        f"{key} must be {want}"
        for key, want in REQUIRED.items()
        if key != "spark.ui.filters" and str(settings.get(key, "")).strip().lower() != want
    ]
    # other filters may come beside it; Spark splits the list on commas
    if UI_FILTER not in [f.strip() for f in str(settings.get("spark.ui.filters", "")).split(",")]:
        out.append(f"spark.ui.filters must include {UI_FILTER}")
    for key in (SECRET_KEY, UI_KEY):
        value = settings.get(key)
        if not isinstance(value, str) or len(value.strip()) < MIN_SECRET_LENGTH:
            out.append(f"{key} must be set (at least {MIN_SECRET_LENGTH} characters)")
    return out
