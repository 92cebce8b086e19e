"""The mm2.properties of every committed team and every accepted fixture team, read by Kafka's own
MirrorMaker 2 classes (MirrorMakerConfig, DefaultTopicFilter: jvm/mm2-filter/Mm2TopicFilter.java
on the jars `make jars` fetched), replicates exactly the topics the team is granted.

The expectation is computed here without any regex: a candidate topic name is granted when a
catalogue entry the team may read covers it (the same name, or a name starting with the prefix).
Candidates include restricted topics, other teams' topics and other spellings (case, affixes).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from infra import spec, validate
from infra.components.kafka_mirror import mm2_properties

REPO = spec.INFRA.parent
KAFKA_JARS = REPO / ".jvm" / "kafka"
PROGRAM = REPO / "jvm" / "mm2-filter" / "Mm2TopicFilter.java"
ACCEPTED = REPO / "tests" / "fixtures" / "accepted_teams"
ACCEPTED_GRANTS = REPO / "tests" / "fixtures" / "accepted_grants"

# skipped on a developer's machine without the jars; never in CI (`make test` fetches them first)
pytestmark = [
    pytest.mark.jvm,
    pytest.mark.skipif(
        not os.environ.get("CI") and (not any(KAFKA_JARS.glob("connect-mirror-*.jar")) or not shutil.which("java")),
        reason="needs Java and Kafka's jars in .jvm/kafka (make jars)",
    ),
]

# Teams whose patterns select part of what they are granted: the names they must replicate, by hand.
NARROWED = {
    ("promo-stats", "mainstream"): {"campaign-clicks", "campaign-views", "campaign-impressions-x1", "campaign-v2"}
}


def candidates(platform: spec.Platform) -> list[str]:
    names = {
        "__consumer_offsets",
        "heartbeats",
        "mm2-offset-syncs.local.internal",
        "ledger-x",
        "LEDGER-x",
        "CUSTOMER-PROFILE-UPDATES",
        "growth-lab--out",
        "campaign-x.internal",
        "campaign-x-internal",
        "campaign-x.replica",
    }
    for cluster in platform.kafka_clusters.values():
        for t in cluster.topics:
            if t.is_prefix:
                names |= {
                    t.value,
                    t.value + "a",
                    t.value + "clicks",
                    t.value + "views",
                    t.value + "impressions-x1",
                    t.value + "impressions-xyz",
                    t.value + "v2",
                    t.value.upper() + "a",
                    "x" + t.value + "a",
                }
            else:
                names |= {t.value, t.value.upper(), t.value.lower(), t.value + "x", "x" + t.value, t.value + "-v2"}
    return sorted(names)


def excluded_by_mirrormaker(name: str) -> bool:
    """MirrorMaker 2's default topics.exclude (Kafka 4: mm2.*\\.internal, .*\\.replica, __.*), as
    string tests (mm2.properties sets no topics.exclude)."""
    return (name.startswith("mm2") and name.endswith(".internal")) or name.endswith(".replica") or name.startswith("__")


def granted_names(s: spec.TeamSpec, platform: spec.Platform, cluster: str, names: list[str]) -> set[str]:
    entries = [t for t in platform.kafka_clusters[cluster].topics if t.readable_by(s.name)]
    return {
        n
        for n in names
        if not excluded_by_mirrormaker(n)
        and any(n.startswith(t.value) if t.is_prefix else n == t.value for t in entries)
    }


def replicated_by_kafka(files: list[Path], names: list[str]) -> dict[str, set[str]]:
    """{file: the candidate names Kafka's DefaultTopicFilter lets through}, one JVM for all files."""
    result = subprocess.run(
        ["java", "-cp", f"{KAFKA_JARS}/*", str(PROGRAM), *map(str, files)],
        input="\n".join(names) + "\n",
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    out: dict[str, set[str]] = {}
    current = None
    for line in result.stdout.splitlines():
        if line.startswith("FILE "):
            current = line[5:]
            out[current] = set()
        elif not line.startswith("FLOW ") and current is not None:
            out[current].add(line)
    return out


def write_mm2(directory: Path, team: str, cluster: str, patterns) -> Path:
    path = directory / f"{team}.{cluster}.properties"
    path.write_text(
        mm2_properties(
            source_alias=cluster,
            source_bootstrap_servers=f"{cluster}:9092",
            local_bootstrap_servers="mirror:9092",
            topics=list(patterns),
            replication_factor=3,
        )
    )
    return path


@pytest.fixture(scope="module")
def platform() -> spec.Platform:
    return spec.load_platform()


@pytest.fixture(scope="module")
def every_team() -> list[spec.TeamSpec]:
    fixtures, problems = validate.validate(sorted(ACCEPTED.glob("*.yaml")), grants_dir=ACCEPTED_GRANTS)
    assert problems == [], problems
    return spec.load_all() + fixtures


def test_every_mirror_replicates_exactly_what_its_team_is_granted(tmp_path, platform, every_team):
    names = candidates(platform)
    mirrors = [
        (s, read.cluster, write_mm2(tmp_path, s.name, read.cluster, read.topics))
        for s in every_team
        for read in s.kafka
        if read.mirrored
    ]
    assert {s.name for s, _, _ in mirrors} >= {"allocations", "fraud", "api-health", "promo-stats"}
    kafka = replicated_by_kafka([path for _, _, path in mirrors], names)
    for s, cluster, path in mirrors:
        got, granted = kafka[str(path)], granted_names(s, platform, cluster, names)
        assert got <= granted, (s.name, cluster, sorted(got - granted))
        assert got == NARROWED.get((s.name, cluster), granted), (s.name, cluster, sorted(got ^ granted))
        assert got, (s.name, cluster)  # not vacuous: every mirror replicates something


def test_the_check_sees_a_pattern_that_acts_beyond_its_text(tmp_path, platform):
    """The issue's case, written into mm2.properties without validation: Kafka's own filter
    replicates the restricted customer-profile-updates (so the check above could fail), and
    validation refuses the spec (so no committed or fixture mirror can carry it)."""
    patterns = ["(?i)ledger-.*", "CUSTOMER-PROFILE-UPDATES|campaign-.*"]
    path = write_mm2(tmp_path, "ledger", "mainstream", patterns)
    got = replicated_by_kafka([path], candidates(platform))[str(path)]
    assert "customer-profile-updates" in got
    with pytest.raises(spec.SpecError) as e:
        spec.parse(
            'team: ledger\nowners: ["@gojek/ledger"]\ntier: standard\nnetwork: {cidr: 10.70.60.0/24}\n'
            f"kafka: [{{cluster: mainstream, mirrored: true, topics: {patterns!r}}}]\n",
            source="infra/teams/ledger.yaml",
            platform=platform,
        )
    assert any("kafka[0].topics[0]: '(?i)ledger-.*' is refused: an inline flag" in p for p in e.value.problems)
