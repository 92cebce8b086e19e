"""What a URL a user gives is refused for, wherever one is taken (a job's schema URL, a
descriptor set's address)."""

from __future__ import annotations

import re

# the authority: what follows scheme:// up to the path, query or fragment (RFC 3986, 3.2)
_AUTHORITY = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://([^/?#]*)")


def carries_login(url: str) -> bool:
    """Whether a URL names a user, with or without a password (scheme://user[:password]@host).
    Such a URL is refused and never repeated in the error: it would be stored, logged and shown
    with its secret."""
    authority = _AUTHORITY.match(url.strip())
    return authority is not None and "@" in authority.group(1)
