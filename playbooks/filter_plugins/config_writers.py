"""Writers for the config formats the roles render: Java properties (javaproperties, with its
escaping of '=', ':', '#', '!', backslashes and non-ASCII), supervisord's INI files
(configparser, with supervisord's '%' expansion escaped), systemd command lines (systemd's
quoting, '%' specifiers and '$' expansion escaped), TOML (tomli_w), postgresql.conf (quoted
values) and PostgreSQL's record files, pg_hba.conf and pg_ident.conf (plain tokens only).
Templates call these instead of pasting values into lines, so no value can add a line, a key or
a section."""

from __future__ import annotations

import configparser
import io
import re

import javaproperties
import tomli_w
from ansible.errors import AnsibleFilterError

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_NAME = re.compile(r"[A-Za-z0-9_.:-]+")
_PG_SETTING = re.compile(r"[a-z_][a-z0-9_.]*")
_PG_TOKEN = re.compile(r"[A-Za-z0-9_.:/@=+-]+")


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
                raise AnsibleFilterError(
                    f"supervisor_ini [{section}]: option {key!r} has a control character or a bad name"
                )
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


def toml(settings):
    """A dict as TOML text (tomli_w): nested dicts are tables; None values are left out."""
    if not isinstance(settings, dict):
        raise AnsibleFilterError(f"toml expects a mapping, got {type(settings).__name__}")
    return tomli_w.dumps(_toml_value(settings, "toml"))


def _toml_value(value, where: str):
    if isinstance(value, dict):
        table = {}
        for key, item in value.items():
            if _CONTROL.search(str(key)):
                raise AnsibleFilterError(f"toml: {where}: key {str(key)!r} has a control character")
            if item is not None:
                table[str(key)] = _toml_value(item, f"{where}.{key}")
        return table
    if isinstance(value, (list, tuple)):
        return [_toml_value(item, f"{where}[]") for item in value if item is not None]
    if isinstance(value, (bool, int, float)):
        return value
    text = str(value)
    if _CONTROL.search(text):
        raise AnsibleFilterError(f"toml: {where}: {text!r} has a control character")
    return text


def postgresql_conf(settings):
    """postgresql.conf text from {setting: value}, sorted: strings single-quoted with quotes and
    backslashes escaped, booleans on/off, numbers bare; None values are left out."""
    if not isinstance(settings, dict):
        raise AnsibleFilterError(f"postgresql_conf expects a mapping, got {type(settings).__name__}")
    lines = []
    for key in sorted(settings, key=str):
        value = settings[key]
        if value is None:
            continue
        if not _PG_SETTING.fullmatch(str(key)):
            raise AnsibleFilterError(f"postgresql_conf: {str(key)!r} is not a setting name (a-z, 0-9, _ and .)")
        if isinstance(value, bool):
            text = "on" if value else "off"
        elif isinstance(value, (int, float)):
            text = str(value)
        else:
            raw = _text(value)
            if _CONTROL.search(raw):
                raise AnsibleFilterError(f"postgresql_conf: {key}: {raw!r} has a control character")
            text = "'" + raw.replace("\\", "\\\\").replace("'", "''") + "'"
        lines.append(f"{key} = {text}\n")
    return "".join(lines)


def postgresql_records(records):
    """pg_hba.conf or pg_ident.conf text: one line per record, a list of fields, each a plain
    token (letters, digits and _.:/@=+-), never quoted, so no field can hold a space or a line."""
    if not isinstance(records, (list, tuple)):
        raise AnsibleFilterError("postgresql_records expects a list of records (lists of fields)")
    lines = []
    for record in records:
        if not isinstance(record, (list, tuple)) or not record:
            raise AnsibleFilterError(f"postgresql_records: {record!r} is not a non-empty list of fields")
        fields = [_text(field) for field in record]
        for field in fields:
            if not _PG_TOKEN.fullmatch(field):
                raise AnsibleFilterError(
                    f"postgresql_records: field {field!r} is not a plain token (letters, digits and _.:/@=+-)"
                )
        lines.append(" ".join(fields) + "\n")
    return "".join(lines)


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
        return {
            "java_properties": java_properties,
            "supervisor_ini": supervisor_ini,
            "systemd_exec": systemd_exec,
            "toml": toml,
            "postgresql_conf": postgresql_conf,
            "postgresql_records": postgresql_records,
        }
