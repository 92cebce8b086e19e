"""Limits on a spec file checked before YAML builds anything from it: size, then nesting depth.

PyYAML's composer recurses once per nesting level (a deep file ends in a RecursionError) and
every later check walks the whole document (a 50 MB file took 47 s and had its values echoed
back). So a file is read at most MAX_BYTES + 1 bytes, and its depth is measured on YAML's token
stream, which is scanned without recursion. Problems name the file and never quote its values.
"""

from __future__ import annotations

from pathlib import Path

import yaml

MAX_BYTES = 64 * 1024  # the largest committed spec is under 1 KiB
# a spec needs 4 (kafka[0].topics[0]). Counted on tokens: a list written without indentation under a
# key opens none, so the count may fall short of the true depth, by at most half
MAX_DEPTH = 8
MAX_STRING = 1000  # no field of a spec holds more (topic patterns: infra/topic_regex.py)

_OPEN = (
    yaml.BlockMappingStartToken,
    yaml.BlockSequenceStartToken,
    yaml.FlowMappingStartToken,
    yaml.FlowSequenceStartToken,
)
_CLOSE = (yaml.BlockEndToken, yaml.FlowMappingEndToken, yaml.FlowSequenceEndToken)


def read_text(path: Path, label: str) -> tuple[str | None, str | None]:
    """(the file's text, None) or (None, why it is refused): too large, not UTF-8, unreadable."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_BYTES + 1)
    except OSError as e:
        return None, f"{label}:1: (file): cannot be read ({e.strerror})"
    if len(data) > MAX_BYTES:
        return None, (
            f"{label}:1: (file): larger than {MAX_BYTES // 1024} KiB, the most a team spec may be "
            "(a spec is a few dozen lines): refused unread"
        )
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as e:
        return None, f"{label}:1: (file): not UTF-8 text (byte {e.start})"


def shape_problem(text: str, label: str) -> str | None:
    """Why a spec's text is refused before it is parsed (size, depth), or None. A YAML syntax error
    found while scanning is left to the parser, which says where and how to fix it."""
    if len(text.encode("utf-8")) > MAX_BYTES:
        return f"{label}:1: (file): larger than {MAX_BYTES // 1024} KiB, the most a team spec may be: refused unread"
    level, line = 0, 1
    try:
        for token in yaml.scan(text, Loader=yaml.SafeLoader):
            if isinstance(token, _OPEN):
                level += 1
                if level > MAX_DEPTH:
                    line = token.start_mark.line + 1
                    return (
                        f"{label}:{line}: (file): nested more than {MAX_DEPTH} levels deep (lists and mappings "
                        "inside each other); a team spec needs 4: refused before parsing"
                    )
            elif isinstance(token, _CLOSE):
                level -= 1
            elif isinstance(token, yaml.ScalarToken) and len(token.value) > MAX_STRING:
                line = token.start_mark.line + 1
                return (
                    f"{label}:{line}: (file): a value of {len(token.value)} characters; no field of a team "
                    f"spec takes more than {MAX_STRING}"
                )
    except yaml.YAMLError:
        return None
    return None
