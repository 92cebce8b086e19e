"""One duration grammar for job files, drill playbooks and the faults' command line: each caller
reads the same strings as the same length of time, and refuses the same mistakes."""

from __future__ import annotations

import re

import pytest

from chaos.faults.base import parse_duration
from chaos.faults.errors import FaultError
from chaos.playbook import duration, fmt_duration
from dagger_runtime import durations
from dagger_runtime.config._checks import parse_duration_ms

# (text, seconds), the seconds worked out by hand
SAME = [
    ("90s", 90),
    ("1m30s", 90),
    ("30s 1m", 90),
    ("1.5h", 5400),
    ("500ms", 0.5),
    ("2d", 172_800),
    ("1h 30m 15s", 5415),
    ("0s", 0),
]


@pytest.mark.parametrize("text, seconds", SAME)
def test_every_caller_reads_a_duration_as_the_same_length(text, seconds):
    assert duration(text) == seconds == parse_duration(text)
    assert parse_duration_ms(text) == round(seconds * 1000)
    assert re.fullmatch(durations.PATTERN, text)  # job.schema.json's pattern agrees


@pytest.mark.parametrize("text", ["soon", "20 mins", "1h30", "-5m", "m", "", "1.5.2s", "5 s s"])
def test_every_caller_refuses_the_same_mistakes(text):
    with pytest.raises(ValueError):
        duration(text)
    with pytest.raises(ValueError):
        parse_duration_ms(text)
    if text:  # the command line's empty option means none
        with pytest.raises(FaultError):
            parse_duration(text)
    assert not re.fullmatch(durations.PATTERN, text)


def test_a_bare_number_is_seconds_on_the_command_line_only():
    assert parse_duration("30") == 30 and parse_duration(2.5) == 2.5
    with pytest.raises(ValueError, match="30 has no unit: write 30s, 30m or 30h"):
        duration(30)
    with pytest.raises(ValueError, match="has no unit"):
        parse_duration_ms("30")
    with pytest.raises(FaultError, match="negative"):
        parse_duration("-3")


@pytest.mark.parametrize("seconds", [0, 0.25, 59, 60, 90, 3600, 5415, 86_400 + 61])
def test_text_reads_back_as_the_same_seconds(seconds):
    assert duration(fmt_duration(seconds)) == seconds
