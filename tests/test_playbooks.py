"""The playbooks' own checks: yamllint and ansible-lint clean (production profile), and the config
writers the templates use, attacked with the values that would break a pasted config line."""

from __future__ import annotations

import configparser
import shlex
import subprocess
import sys
from pathlib import Path

import javaproperties
import pytest
from ansible.errors import AnsibleFilterError

from tests.filter_plugins import plugin

REPO = Path(__file__).resolve().parent.parent
PLAYBOOKS = REPO / "playbooks"

_writers = plugin("config_writers")
java_properties, supervisor_ini, systemd_exec = _writers.java_properties, _writers.supervisor_ini, _writers.systemd_exec

BIN = Path(sys.executable).parent


def test_yamllint_is_clean():
    result = subprocess.run(
        [str(BIN / "yamllint"), "--strict", "."], cwd=PLAYBOOKS, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_ansible_lint_is_clean_at_the_production_profile():
    result = subprocess.run(
        [str(BIN / "ansible-lint"), "--offline", "--profile", "production", "--nocolor"],
        cwd=PLAYBOOKS,
        capture_output=True,
        text=True,
        timeout=600,
        env={"PATH": f"{BIN}:/usr/bin:/bin", "HOME": str(Path.home())},
    )
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-5000:]


@pytest.mark.parametrize(
    "value",
    [
        "a\nprocess.roles=controller",  # a second line: a key the role never set
        "x\rlisteners=PLAINTEXT://0.0.0.0:1",
    ],
)
def test_a_properties_value_cannot_add_a_line(value):
    with pytest.raises(AnsibleFilterError):
        java_properties({"log.dirs": value})


def test_properties_special_characters_read_back_as_written():
    settings = {
        "listeners": "PLAINTEXT://h:1",
        "a=b": "c#d!e",
        "path": "C:\\dir\\x",
        "unicode": "é",
        "n": 3,
        "flag": True,
    }
    text = java_properties(settings)
    assert javaproperties.loads(text) == {
        "listeners": "PLAINTEXT://h:1",
        "a=b": "c#d!e",
        "path": "C:\\dir\\x",
        "unicode": "é",
        "n": "3",
        "flag": "true",
    }


def test_supervisor_values_keep_percent_signs_and_cannot_add_sections():
    text = supervisor_ini(
        {"program:k": {"command": "java -XX:MaxRAMPercentage=50% -cp 'a b/*' Main", "environment": {"A": "1"}}}
    )
    # supervisord expands %(name)s: read back the way it does, the command is what was written
    parser = configparser.ConfigParser()
    parser.read_string(text)
    assert parser.get("program:k", "command") == "java -XX:MaxRAMPercentage=50% -cp 'a b/*' Main"
    assert shlex.split(parser.get("program:k", "command"))[3] == "a b/*"
    for bad in (
        {"program:k": {"command": "x\n[program:evil]\ncommand=sh"}},
        {"program:k]\n[program:evil": {"command": "x"}},
        {"program:k": {"environment": {"A": 'x",B="y'}}},
    ):
        with pytest.raises(AnsibleFilterError):
            supervisor_ini(bad)


def test_systemd_arguments_are_quoted_and_expansions_escaped():
    line = systemd_exec(["/usr/bin/java", "-cp", "/opt/a b/*", 'say "hi"', "50%", "$HOME", "plain"])
    assert line == '/usr/bin/java -cp "/opt/a b/*" "say \\"hi\\"" 50%% "$$HOME" plain'
    with pytest.raises(AnsibleFilterError):
        systemd_exec(["java", "x\nExecStartPre=/bin/sh"])


def test_the_bcrypt_hash_is_kept_while_it_matches_and_made_anew_otherwise():
    bcrypt = pytest.importorskip("bcrypt")
    bcrypt_hash = plugin("password_hashes").bcrypt_hash

    first = bcrypt_hash("s3cret-of-32-characters-xxxxxxxx")
    assert first.startswith("$2b$12$") and bcrypt.checkpw(b"s3cret-of-32-characters-xxxxxxxx", first.encode())
    # the same password: the same hash, so a converge that changes nothing writes the same file
    assert bcrypt_hash("s3cret-of-32-characters-xxxxxxxx", first) == first
    # another password, a broken or foreign hash, nothing: a new hash of the password (a new salt)
    for current in (
        bcrypt_hash("another"),
        first[:-1] + ("A" if first[-1] != "A" else "B"),
        "$2b$garbage",
        "plain-text",
        None,
        "",
    ):
        made = bcrypt_hash("s3cret-of-32-characters-xxxxxxxx", current)
        assert made != current and bcrypt.checkpw(b"s3cret-of-32-characters-xxxxxxxx", made.encode())
    assert bcrypt_hash("s3cret-of-32-characters-xxxxxxxx", None) != first  # a salt of its own
    for bad in ("", "x" * 73, None):
        with pytest.raises(AnsibleFilterError):
            bcrypt_hash(bad)


def test_no_filter_plugin_is_named_like_a_project_package():
    # a test or tool that puts filter_plugins/ on sys.path would otherwise import the plugin in the
    # package's place (a plugin named portal.py broke every later `import portal.serve` in a worker)
    packages = {p.parent.name for p in REPO.glob("*/__init__.py")}
    plugins = {p.stem for p in (PLAYBOOKS / "filter_plugins").glob("*.py")}
    assert "portal" in packages and "sign_in" in plugins
    assert not packages & plugins
