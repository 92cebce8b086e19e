"""spark_ui_token: a JWS (HS256) for the Spark UIs' org.apache.spark.ui.JWSFilter, signed with the
cluster's UI key: the deploy tooling's own token (dagger_runtime.lifecycle.spark.ui_token, one
implementation of the scheme), for the role's health check. The controller runs the project's
Python, so the runtime is importable here."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError


def spark_ui_token(key: str, ttl_s: int = 300) -> str:
    from dagger_runtime.errors import DaggerError
    from dagger_runtime.lifecycle.spark import ui_token

    try:
        return ui_token(str(key).strip(), int(ttl_s))
    except ValueError as e:
        raise AnsibleFilterError(f"spark_ui_token: the UI key is not BASE64URL: {e}") from None
    except DaggerError as e:
        raise AnsibleFilterError(f"spark_ui_token: {e}") from None


class FilterModule:
    def filters(self):
        return {"spark_ui_token": spark_ui_token}
