"""Writers for the config formats the roles render: Java properties (javaproperties, with its
escaping of '=', ':', '#', '!', backslashes and non-ASCII), supervisord's INI files
(configparser, with supervisord's '%' expansion escaped) and systemd command lines (systemd's
quoting, '%' specifiers and '$' expansion escaped). Templates call these instead of pasting
values into lines, so no value can add a line, a key or a section."""
from __future__ import annotations

import configparser
import io
import re

import javaproperties
from ansible.errors import AnsibleFilterError

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_NAME = re.compile(r"[A-Za-z0-9_.:-]+")


def java_properties(settings, comment=None):
    """A dict as a Java .properties text, sorted by key."""
    if not isinstance(settings, dict):
        raise AnsibleFilterError(f"java_properties expects a mapping, got {type(settings).__name__}")
    flat = {}
    for key, value in settings.items():
        if value is None:
            continue
        text = _text(value)
        if _CONTROL.search(str(key)) or _CONTROL.search(text):
            raise AnsibleFilterError(f"java_properties: {key!r} has a control character in its name or value")
        flat[str(key)] = text
    return javaproperties.dumps(flat, comments=comment, timestamp=False, sort_keys=True)


def supervisor_ini(sections):
    """supervisord INI text from {section: {option: value}}; `environment` may be a mapping."""
    parser = configparser.RawConfigParser(interpolation=None)
    parser.optionxform = str
    for section, options in sections.items():
        if not _NAME.fullmatch(str(section)):
            raise AnsibleFilterError(f"supervisor_ini: {section!r} is not a section name (letters, digits, _.:-)")
        parser.add_section(section)
        for key, value in options.items():
            if value is None or value == {}:
                continue
            if key == "environment" and isinstance(value, dict):
                value = ",".join(f'{k}="{_env_value(k, v)}"' for k, v in value.items())
            text = _text(value)
            if _CONTROL.search(text) or not _NAME.fullmatch(str(key)):
                raise AnsibleFilterError(f"supervisor_ini [{section}]: option {key!r} has a control character "
                                         "or a bad name")
            parser.set(section, key, text.replace("%", "%%"))  # supervisord expands %(name)s
    out = io.StringIO()
    parser.write(out)
    return out.getvalue()


def systemd_exec(argv):
    """A command line for ExecStart=: each argument quoted as systemd parses it."""
    if not isinstance(argv, (list, tuple)) or not argv:
        raise AnsibleFilterError("systemd_exec expects a non-empty list of arguments")
    words = []
    for arg in argv:
        text = _text(arg)
        if _CONTROL.search(text):
            raise AnsibleFilterError(f"systemd_exec: argument {text!r} has a control character")
        text = text.replace("%", "%%").replace("$", "$$")
        if re.fullmatch(r"[A-Za-z0-9_@%+=:,./-]+", text):
            words.append(text)
        else:
            words.append('"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"')
    return " ".join(words)


def _env_value(key, value) -> str:
    text = _text(value)
    if '"' in text or "," in text or "\\" in text or not _NAME.fullmatch(str(key)):
        raise AnsibleFilterError(f"supervisor environment {key}: quotes, commas and backslashes are not allowed")
    return text


def _text(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(_text(v) for v in value)
    return str(value)


class FilterModule:
    def filters(self):
        return {"java_properties": java_properties, "supervisor_ini": supervisor_ini, "systemd_exec": systemd_exec}
