"""Password hashes for the servers that keep one instead of the password (Prometheus's
--web.config.file basic_auth_users), made by the `bcrypt` library.

`bcrypt_hash(password, current)` keeps `current` when it is a bcrypt hash of that password, and
makes a new one (random salt) only otherwise, so a converge that changes nothing writes the same
file again."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

BCRYPT_ROUNDS = 12


def bcrypt_hash(password, current=None, rounds=BCRYPT_ROUNDS):
    """A bcrypt hash ($2b$) of `password`: `current` if it already is one of it."""
    try:
        import bcrypt
    except ImportError:
        raise AnsibleFilterError(
            "bcrypt_hash needs the Python package bcrypt in the Python running Ansible "
            "(the project's dependencies: `make venv`)"
        ) from None
    if not isinstance(password, str) or not password:
        raise AnsibleFilterError("bcrypt_hash: the password must be a non-empty string")
    secret = password.encode("utf-8")
    if len(secret) > 72:
        raise AnsibleFilterError("bcrypt_hash: bcrypt reads 72 bytes of a password at most")
    if isinstance(current, str) and current.startswith(("$2a$", "$2b$", "$2y$")):
        try:
            if bcrypt.checkpw(secret, current.encode("ascii")):
                return current
        except ValueError:  # not a well-formed hash: replaced
            pass
    return bcrypt.hashpw(secret, bcrypt.gensalt(rounds=int(rounds))).decode("ascii")


class FilterModule:
    def filters(self):
        return {"bcrypt_hash": bcrypt_hash}
