#!/usr/bin/python
"""Ansible module: a Kafka cluster's SCRAM users and ACLs, converged to exactly what is declared.

For every managed principal: its SCRAM-SHA-512 credential exists and accepts its password, and its
ACLs are exactly the declared ones (missing ones created, any other ACL of that principal deleted),
so access taken away in the inventory is taken away on the cluster. Principals not declared here
(the super users, anyone else's) are left alone. Talks to the cluster as the administrator through
kafka-python's admin client, on the controller (delegate_to: localhost), so the broker hosts need
no Python Kafka client.
"""

from __future__ import annotations

import re

from ansible.module_utils.basic import AnsibleModule

DOCUMENTATION = r"""
module: kafka_access
short_description: Converge a Kafka cluster's SCRAM users and ACLs
options:
  bootstrap_servers: {type: str, required: true}
  admin_user: {type: str, required: true}
  admin_password: {type: str, required: true, no_log: true}
  users:
    type: list
    elements: str
    description: Principals that hold a SCRAM-SHA-512 credential.
  passwords:
    type: dict
    no_log: true
    description: Each user's password.
  acls:
    type: list
    elements: dict
    description: "[{principal, resource_type, name, pattern_type, operations}], ALLOW from any host."
"""

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
# '*' is Kafka's wildcard resource (LITERAL only); other names are topic, group or id names
RESOURCE_NAME = re.compile(r"\*|[A-Za-z0-9._-]{1,249}")
RESOURCE_TYPES = ("TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID")
PATTERN_TYPES = ("LITERAL", "PREFIXED")
OPERATIONS = (
    "READ",
    "WRITE",
    "CREATE",
    "DELETE",
    "ALTER",
    "DESCRIBE",
    "DESCRIBE_CONFIGS",
    "ALTER_CONFIGS",
    "IDEMPOTENT_WRITE",
    "CLUSTER_ACTION",
    "ALL",
)


def declared(acls: list[dict]) -> tuple[set[tuple], list[str]]:
    """The declared ACLs as (principal, resource_type, name, pattern_type, operation) tuples."""
    wanted, problems = set(), []
    for i, acl in enumerate(acls):
        where = f"acls[{i}]"
        principal, rtype = str(acl.get("principal", "")), str(acl.get("resource_type", "")).upper()
        name, ptype = str(acl.get("name", "")), str(acl.get("pattern_type", "LITERAL")).upper()
        if not NAME.fullmatch(principal):
            problems.append(f"{where}.principal: {principal!r} is not a principal name (letters, digits, . _ -)")
        if rtype not in RESOURCE_TYPES:
            problems.append(f"{where}.resource_type: {rtype!r}: one of {', '.join(RESOURCE_TYPES)}")
        if not RESOURCE_NAME.fullmatch(name) or (name == "*" and ptype != "LITERAL"):
            problems.append(f"{where}.name: {name!r} is not a resource name (or '*' with pattern_type LITERAL)")
        if ptype not in PATTERN_TYPES:
            problems.append(f"{where}.pattern_type: {ptype!r}: one of {', '.join(PATTERN_TYPES)}")
        operations = acl.get("operations") or []
        if not operations:
            problems.append(f"{where}.operations: name at least one")
        for op in operations:
            if str(op).upper() not in OPERATIONS:
                problems.append(f"{where}.operations: {op!r}: one of {', '.join(OPERATIONS)}")
            else:
                wanted.add((principal, rtype, name, ptype, str(op).upper()))
    return wanted, problems


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            bootstrap_servers=dict(type="str", required=True),
            admin_user=dict(type="str", required=True),
            admin_password=dict(type="str", required=True, no_log=True),
            users=dict(type="list", elements="str", default=[]),
            passwords=dict(type="dict", default={}, no_log=True),
            acls=dict(type="list", elements="dict", default=[]),
        ),
        supports_check_mode=True,
    )
    p = module.params
    wanted, problems = declared(p["acls"])
    users = {name: str(p["passwords"].get(name) or "") for name in p["users"]}
    problems += [f"users: {name!r} is not a principal name" for name in users if not NAME.fullmatch(name)]
    problems += [f"users: {name}: no password" for name, pw in users.items() if not pw]
    if problems:
        module.fail_json(msg="; ".join(problems))
    try:
        from kafka import KafkaConsumer
        from kafka.admin import (
            ACL,
            ACLFilter,
            ACLOperation,
            ACLPermissionType,
            ACLResourcePatternType,
            KafkaAdminClient,
            ResourcePattern,
            ResourcePatternFilter,
            ResourceType,
            ScramMechanism,
            UserScramCredentialUpsertion,
        )
        from kafka.errors import KafkaError
    except ImportError:
        module.fail_json(msg="kafka_access needs kafka-python on the controller (pip install kafka-python)")

    sasl = dict(security_protocol="SASL_PLAINTEXT", sasl_mechanism="SCRAM-SHA-512")
    servers = p["bootstrap_servers"]

    def authenticates(user: str, password: str) -> bool:
        try:
            consumer = KafkaConsumer(
                bootstrap_servers=servers,
                sasl_plain_username=user,
                sasl_plain_password=password,
                request_timeout_ms=10000,
                **sasl,
            )
        except KafkaError:
            return False
        try:
            consumer.topics()  # a metadata request: only an authenticated client gets an answer
            return True
        except KafkaError:
            return False
        finally:
            consumer.close()

    changes: list[str] = []
    try:
        admin = KafkaAdminClient(
            bootstrap_servers=servers,
            sasl_plain_username=p["admin_user"],
            sasl_plain_password=p["admin_password"],
            client_id="ansible-kafka-access",
            request_timeout_ms=30000,
            **sasl,
        )
    except KafkaError as e:
        module.fail_json(msg=f"cannot reach {servers} as {p['admin_user']}: {e}")
    try:
        # a user without a credential is set at once; one with a credential only when its password
        # no longer logs in (a failed login costs kafka-python's whole bootstrap timeout)
        held_credentials = admin.describe_user_scram_credentials(sorted(users)) if users else {}
        has = {
            name
            for name, info in (held_credentials or {}).items()
            if not info.get("error")
            and any(
                getattr(c.get("mechanism"), "name", c.get("mechanism")) == "SCRAM_SHA_512"
                for c in info.get("credential_infos") or []
            )
        }
        stale = [name for name, password in users.items() if name not in has or not authenticates(name, password)]
        if stale and not module.check_mode:
            errors = admin.alter_user_scram_credentials(
                [
                    UserScramCredentialUpsertion(name, ScramMechanism.SCRAM_SHA_512, users[name], iterations=8192)
                    for name in stale
                ]
            )
            failed = {user: err for user, err in (errors or {}).items() if err}
            if failed:
                module.fail_json(msg=f"SCRAM credentials not set: {failed}")
        changes += [f"credential for {name}" for name in stale]

        principals = {w[0] for w in wanted} | set(users)
        held: dict[tuple, object] = {}
        for principal in sorted(principals):
            found, error = admin.describe_acls(
                ACLFilter(
                    principal=f"User:{principal}",
                    host=None,
                    operation=ACLOperation.ANY,
                    permission_type=ACLPermissionType.ANY,
                    resource_pattern=ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY),
                )
            )
            if error is not None and getattr(error, "errno", 0):
                module.fail_json(msg=f"describing the ACLs of {principal}: {error}")
            for acl in found:
                if acl.permission_type.name == "DENY":
                    continue  # an operator's DENY only narrows access: never removed here
                key = (
                    acl.principal.removeprefix("User:"),
                    acl.resource_pattern.resource_type.name,
                    acl.resource_pattern.resource_name,
                    acl.resource_pattern.pattern_type.name,
                    acl.operation.name,
                )
                held[key if acl.host == "*" else key + (acl.host,)] = acl
        # an ALLOW for every principal would open the cluster past every grant: refuse to go on
        everyone, _ = admin.describe_acls(
            ACLFilter(
                principal="User:*",
                host=None,
                operation=ACLOperation.ANY,
                permission_type=ACLPermissionType.ALLOW,
                resource_pattern=ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY),
            )
        )
        if everyone:
            module.fail_json(
                msg="ACLs allow every principal (User:*): "
                + "; ".join(
                    f"{a.operation.name} {a.resource_pattern.resource_type.name} {a.resource_pattern.resource_name} "
                    f"({a.resource_pattern.pattern_type.name})"
                    for a in everyone
                )
                + ": remove them (kafka-acls --remove)"
            )
        missing = sorted(wanted - set(held))
        extra = [acl for key, acl in held.items() if key not in wanted]
        if missing and not module.check_mode:
            result = admin.create_acls(
                [
                    ACL(
                        principal=f"User:{principal}",
                        host="*",
                        operation=ACLOperation[op],
                        permission_type=ACLPermissionType.ALLOW,
                        resource_pattern=ResourcePattern(ResourceType[rtype], name, ACLResourcePatternType[ptype]),
                    )
                    for principal, rtype, name, ptype, op in missing
                ]
            )
            if result.get("failed"):
                module.fail_json(msg=f"ACLs not created: {result['failed']}")
        if extra and not module.check_mode:
            for _, _deleted, error in admin.delete_acls(
                [
                    ACLFilter(
                        principal=a.principal,
                        host=a.host,
                        operation=a.operation,
                        permission_type=a.permission_type,
                        resource_pattern=ResourcePatternFilter(
                            a.resource_pattern.resource_type,
                            a.resource_pattern.resource_name,
                            a.resource_pattern.pattern_type,
                        ),
                    )
                    for a in extra
                ]
            ):
                if error is not None and getattr(error, "errno", 0):
                    module.fail_json(msg=f"ACLs not deleted: {error}")
        changes += [f"allow {' '.join(m)}" for m in missing]
        changes += [
            f"revoke {a.permission_type.name} {a.principal} from {a.host} {a.operation.name} "
            f"{a.resource_pattern.resource_type.name} {a.resource_pattern.resource_name} "
            f"({a.resource_pattern.pattern_type.name})"
            for a in extra
        ]
    finally:
        admin.close()
    module.exit_json(changed=bool(changes), changes=changes, acls=len(wanted), users=sorted(users))


if __name__ == "__main__":
    main()
