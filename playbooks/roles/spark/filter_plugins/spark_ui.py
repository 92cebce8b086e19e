"""spark_ui_token: a JWS (HS256) for the Spark UIs' org.apache.spark.ui.JWSFilter, signed with the
cluster's UI key as the filter reads it (the key's text, BASE64URL-decoded). Spark only checks the
signature, and jjwt the `exp` claim: the token lives `ttl_s` seconds, so one seen in a log is soon
worthless. The same scheme as dagger_runtime.lifecycle.spark.ui_token (the deploy tooling's)."""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time

from ansible.errors import AnsibleFilterError


def _b64url(data: bytes) -> bytes:
    return base64.urlsafe_b64encode(data).rstrip(b"=")


def spark_ui_token(key: str, ttl_s: int = 300) -> str:
    key = str(key).strip()
    try:
        raw = base64.urlsafe_b64decode(key + "=" * (-len(key) % 4))
    except ValueError as e:
        raise AnsibleFilterError(f"spark_ui_token: the UI key is not BASE64URL: {e}") from None
    if len(raw) < 32:
        raise AnsibleFilterError("spark_ui_token: the UI key is shorter than 256 bits (HS256 needs them)")
    head = _b64url(json.dumps({"alg": "HS256", "typ": "JWT"}, separators=(",", ":")).encode())
    body = _b64url(json.dumps({"sub": "dagger-platform", "exp": int(time.time()) + int(ttl_s)},
                              separators=(",", ":")).encode())
    signed = head + b"." + body
    return (signed + b"." + _b64url(hmac.new(raw, signed, hashlib.sha256).digest())).decode()


class FilterModule:
    def filters(self):
        return {"spark_ui_token": spark_ui_token}
