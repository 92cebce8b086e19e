"""Client login settings for Kafka clusters that authenticate their clients (the kafka role's
`kafka_security: sasl`): the same few settings everywhere, built in one place.

`kafka_login_reference(alias, path)` gives MirrorMaker 2's per-cluster settings whose JAAS entry is
read at start from a principal's client settings file by Kafka's FileConfigProvider, so the
mm2.properties a role writes holds no password."""

from __future__ import annotations

import re

from ansible.errors import AnsibleFilterError

# an absolute path FileConfigProvider can name: `${file:<path>:<key>}` ends the path at ':' and '}'
_PATH = re.compile(r"/[A-Za-z0-9_./+-]*")
_ALIAS = re.compile(r"[A-Za-z0-9_-]+")


def kafka_login_reference(alias, path):
    if not _ALIAS.fullmatch(str(alias)):
        raise AnsibleFilterError(f"kafka_login_reference: cluster alias {alias!r}: letters, digits, '_', '-' only")
    if not _PATH.fullmatch(str(path)) or "/../" in f"{path}/":
        raise AnsibleFilterError(
            f"kafka_login_reference: {path!r} is not an absolute path of letters, digits "
            "and ./_+- (FileConfigProvider cannot name it)"
        )
    return {
        f"{alias}.security.protocol": "SASL_PLAINTEXT",
        f"{alias}.sasl.mechanism": "SCRAM-SHA-512",
        f"{alias}.sasl.jaas.config": f"${{file:{path}:sasl.jaas.config}}",
    }


class FilterModule:
    def filters(self):
        return {"kafka_login_reference": kafka_login_reference}
