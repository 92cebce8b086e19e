"""A team's spec (infra/teams/<team>.yaml) is refused with a message naming the file, the field and
the problem; a valid one is filled in from its tier's defaults."""

from __future__ import annotations

import dataclasses
import ipaddress
import json
import math
import textwrap
from pathlib import Path

import pytest

from infra import spec
from infra.tiers import (
    MIRROR_BROKER_CPU,
    MIRROR_BROKER_MEMORY_GB,
    MIRROR_BROKERS,
    MIRROR_MM2_CPU,
    MIRROR_MM2_MEMORY_GB,
    SIZES,
    TIERS,
)
from infra.validate import validate

SOURCE = "infra/teams/search.yaml"
MINIMAL = """\
team: search
owners: ["@gojek/search"]
tier: standard
network: {cidr: 10.65.0.0/24}
"""


@pytest.fixture(scope="module")
def platform() -> spec.Platform:
    return spec.load_platform()


def refused(text: str, platform: spec.Platform | None = None, source: str = SOURCE) -> list[str]:
    with pytest.raises(spec.SpecError) as e:
        spec.parse(textwrap.dedent(text), source=source, platform=platform)
    assert str(e.value).startswith("invalid team spec:")
    return e.value.problems


def one(problems: list[str]) -> str:
    assert len(problems) == 1, problems
    return problems[0]


def write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.write_text(textwrap.dedent(text))
    return path


# -- the schema: shape and types ------------------------------------------------------------------


def test_the_minimal_spec_is_valid(platform):
    s = spec.parse(MINIMAL, source=SOURCE, platform=platform)
    assert (s.name, s.tier, s.owners, s.cidr) == (
        "search",
        "standard",
        ("@gojek/search",),
        ipaddress.IPv4Network("10.65.0.0/24"),
    )


def test_a_missing_owners_field_is_named():
    problem = one(refused(MINIMAL.replace('owners: ["@gojek/search"]\n', "")))
    assert problem == f"{SOURCE}:1: (top level): 'owners' is a required property"


def test_a_wrong_type_names_the_field_and_the_value():
    problem = one(refused(MINIMAL + "spark: {workers: four}\n"))
    assert problem.startswith(f"{SOURCE}:5: spark.workers: ")
    assert "'four' is not of type 'integer'" in problem


def test_an_unknown_field_is_named_so_a_typo_is_found():
    problem = one(refused(MINIMAL + "sprak: {flavour: gke}\n"))
    assert problem.startswith(f"{SOURCE}:5: sprak: unknown field (did you mean spark?); the fields here are ")


def test_a_bad_enum_names_the_field_and_the_allowed_values():
    problem = one(refused(MINIMAL + "spark: {flavour: k8s}\n"))
    assert problem.startswith(f"{SOURCE}:5: spark.flavour: ")
    assert "'k8s' is not one of ['gke', 'vm']" in problem


def test_several_schema_problems_are_reported_at_once():
    problems = refused("""\
        team: search
        tier: standard
        network: {cidr: 10.65.0.0/24}
        spark: {flavour: k8s, workers: four}
        sprak: {}
        """)
    assert len(problems) == 4, problems
    text = "\n".join(problems)
    for expected in (
        "'owners' is a required property",
        ":5: sprak: unknown field",
        ":4: spark.flavour: 'k8s'",
        "spark.workers: 'four'",
    ):
        assert expected in text


def test_a_file_that_is_not_yaml_or_not_a_mapping_is_refused():
    assert "not valid YAML" in one(refused("team: [search\n"))
    assert "expected a mapping of fields, got list" in one(refused("- team: search\n"))


# -- the team's name: GCP's rules for the names derived from it -------------------------------------


@pytest.mark.parametrize(
    "name, why",
    [
        ("Search", "uppercase"),
        ("9search", "leading digit"),
        ("search_team", "underscore"),
        ("search-", "trailing hyphen"),
        ("api--health", "double hyphen: DAGGER_SECRET_API__HEALTH__ would fall under team api's secrets"),
        ("a" * 21, "longer than 20"),
        ("a" * 24, "service account id dagger-<team> longer than 30"),
    ],
)
def test_a_team_name_that_breaks_gcps_rules_is_refused(name, why):
    # the words of the one rule (dagger_runtime/names.py), which the runtime's job configs use too
    problem = one(refused(MINIMAL.replace("team: search", f"team: {name}")))
    assert problem.startswith(f"{SOURCE}:1: team: a team name is a DNS label ("), why
    assert "lowercase letters, digits and single '-', 3 to 20 characters" in problem
    assert problem.endswith(f", got {name!r}")


@pytest.mark.parametrize("name", ["platform", "default", "kube-system", "kube-public", "gke-system", "dagger-ops"])
def test_a_name_the_platform_or_kubernetes_uses_is_refused(name):
    """Valid DNS labels all, so the schema takes them: the spec's reserved-name check refuses them."""
    problem = one(refused(MINIMAL.replace("team: search", f"team: {name}")))
    assert problem.startswith(
        (f"{SOURCE}:1: team: {name!r} is reserved", f"{SOURCE}:1: team: {name!r} starts with the reserved prefix")
    ), problem
    assert "choose another name" in problem


def test_a_name_next_to_a_reserved_one_is_a_team_like_any_other(platform):
    for name in ("platforms", "kubernetes", "defaults-team"):
        assert spec.parse(MINIMAL.replace("team: search", f"team: {name}"), source=SOURCE, platform=platform)


def test_a_bucket_name_over_63_characters_is_refused(platform):
    long_project = dataclasses.replace(platform, project="gojek-daggers-platform-production")
    name = "a" * 20
    bucket = f"{long_project.project}-{name}-checkpoints"
    assert len(bucket) > spec.BUCKET_MAX
    problem = one(refused(MINIMAL.replace("team: search", f"team: {name}"), platform=long_project))
    # the policy pack's own rule (gcp_name_limits), run by validate on the derived name
    assert problem.startswith(f"{SOURCE}:1: team: name {bucket!r} ({len(bucket)} characters) is not a bucket name")
    assert problem.endswith(": choose another team name")


def test_the_file_must_be_named_after_the_team(tmp_path):
    path = write(tmp_path, "search-team.yaml", MINIMAL)
    with pytest.raises(spec.SpecError) as e:
        spec.load(path)
    assert one(e.value.problems) == f"{path}:1: team: the file must be named after the team (search.yaml)"


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(spec.SpecError) as e:
        spec.load(tmp_path / "nobody.yaml")
    assert one(e.value.problems).endswith("nobody.yaml:1: (file): no such file")


# -- the platform: network range, Kafka catalog -----------------------------------------------------


def test_a_range_outside_the_platforms_range_is_refused(platform):
    problem = one(refused(MINIMAL.replace("10.65.0.0/24", "192.168.10.0/24")))
    assert problem == (
        f"{SOURCE}:4: network.cidr: 192.168.10.0/24 is outside the platform's range {platform.network_range}"
    )


def test_a_range_with_host_bits_set_is_refused():
    problem = one(refused(MINIMAL.replace("10.65.0.0/24", "10.65.0.7/24")))
    assert problem.startswith(f"{SOURCE}:4: network.cidr: '10.65.0.7/24' is not a network address")


def test_an_unknown_kafka_cluster_is_named_with_the_known_ones(platform):
    problem = one(refused(MINIMAL + "kafka: [{cluster: esb-critcal, mirrored: true}]\n"))
    known = ", ".join(sorted(platform.kafka_clusters))
    assert problem == (
        f"{SOURCE}:5: kafka[0].cluster: unknown Kafka cluster 'esb-critcal' (did you mean "
        f"esb-critical?) (the platform has: {known})"
    )


def test_a_kafka_cluster_not_allowed_for_the_tier_is_refused(platform):
    problem = one(
        refused(
            MINIMAL.replace("tier: standard", "tier: experimental")
            + "kafka: [{cluster: playground}, {cluster: esb-critical}]\n"
        )
    )
    tiers = ", ".join(platform.kafka_clusters["esb-critical"].tiers)
    assert problem == f"{SOURCE}:5: kafka[1].cluster: esb-critical is for tiers {tiers}, not experimental"


# -- labels and quotas ------------------------------------------------------------------------------


@pytest.mark.parametrize("label", ["team", "tier", "managed-by"])
def test_a_label_the_platform_sets_is_refused(label):
    problem = one(refused(MINIMAL + f"labels: {{{label}: mine, cost_center: cc-1}}\n"))
    assert problem == f"{SOURCE}:5: labels.{label}: set by the platform; remove it"


def test_a_label_that_breaks_gcps_rules_is_refused():
    problem = one(refused(MINIMAL + "labels: {CostCenter: cc-1}\n"))
    assert problem.startswith(f"{SOURCE}:5: labels: ")
    assert "'CostCenter'" in problem


def test_a_quota_too_small_for_the_spark_cluster_and_its_mirrors_is_refused():
    size = SIZES[TIERS["standard"]["spark"]["size"]]
    mirrors = sum(1 for k in TIERS["standard"]["kafka"] if k["mirrored"])
    brokers = MIRROR_BROKERS["standard"]
    cpu = size["workers"] * size["worker_cores"] + 2 + mirrors * (brokers * MIRROR_BROKER_CPU + MIRROR_MM2_CPU)
    memory = (
        size["workers"] * size["worker_memory_gb"]
        + 4
        + mirrors * (brokers * MIRROR_BROKER_MEMORY_GB + MIRROR_MM2_MEMORY_GB)
    )
    too_small = int(cpu) - 1
    problem = one(refused(MINIMAL + f"quota: {{cpu: {too_small}}}\n"))
    assert problem.startswith(
        f"{SOURCE}:5: quota: {too_small} CPUs / {TIERS['standard']['quota']['memory_gb']} GB "
        "cannot hold the Spark cluster"
    )
    assert f"{mirrors} Kafka mirror(s): they need {cpu:g} / {memory:g}" in problem


def test_a_gke_team_outside_the_platform_clusters_region_is_refused():
    problem = one(refused(MINIMAL + "region: europe-west4\n"))
    assert "region: gke teams run on the platform's cluster in" in problem
    assert "use spark.flavour vm for europe-west4" in problem


def test_the_namespace_quota_does_not_bind_a_vm_cluster(platform):
    s = spec.parse(MINIMAL + "spark: {flavour: vm}\nquota: {cpu: 1, memory_gb: 1}\n", source=SOURCE, platform=platform)
    assert s.spark.flavour == "vm"


def test_several_semantic_problems_are_reported_at_once():
    problems = refused("""\
        team: search
        owners: ["@gojek/search"]
        tier: standard
        network: {cidr: 172.16.0.0/24}
        kafka: [{cluster: nowhere}]
        labels: {team: search}
        quota: {cpu: 2}
        """)
    fields = {p.split(": ")[1] for p in problems}
    lines = {p.split(": ")[1]: int(p.split(": ")[0].rsplit(":", 1)[1]) for p in problems}
    assert len(problems) == 5, problems
    assert fields == {"kafka[0].cluster", "network.cidr", "labels.team", "quota", "quota.cpu"}
    assert lines == {"network.cidr": 4, "kafka[0].cluster": 5, "labels.team": 6, "quota": 7, "quota.cpu": 7}


# -- across teams -----------------------------------------------------------------------------------


def test_overlapping_ranges_between_two_teams_are_refused_by_load_all(tmp_path):
    write(tmp_path, "search.yaml", MINIMAL.replace("10.65.0.0/24", "10.65.0.0/16"))
    write(tmp_path, "maps.yaml", MINIMAL.replace("search", "maps").replace("10.65.0.0/24", "10.65.4.0/24"))
    with pytest.raises(spec.SpecError) as e:
        spec.load_all(tmp_path)
    assert one(e.value.problems) == (
        f"{tmp_path / 'search.yaml'}:4: network.cidr: 10.65.0.0/16 overlaps maps's "
        f"10.65.4.0/24 ({tmp_path / 'maps.yaml'}:4)"
    )


def test_load_all_reports_every_file_and_every_overlap_at_once(tmp_path):
    write(tmp_path, "search.yaml", MINIMAL)
    write(tmp_path, "maps.yaml", MINIMAL.replace("search", "maps"))
    write(tmp_path, "broken.yaml", MINIMAL.replace("search", "broken").replace("tier: standard", "tier: gold"))
    with pytest.raises(spec.SpecError) as e:
        spec.load_all(tmp_path)
    text = "\n".join(e.value.problems)
    assert len(e.value.problems) == 2, text
    assert "broken.yaml:3: tier: 'gold' is not one of" in text
    assert "network.cidr: 10.65.0.0/24 overlaps" in text


def test_check_all_refuses_overlaps_and_duplicate_names(platform):
    a = spec.parse(MINIMAL, source="a.yaml", platform=platform)
    b = spec.parse(MINIMAL.replace("10.65.0.0/24", "10.65.1.0/24"), source="b.yaml", platform=platform)
    c = spec.parse(MINIMAL.replace("search", "maps"), source="c.yaml", platform=platform)
    problems = spec.check_all([a, b, c])
    assert "b.yaml:1: team: search is already used by a.yaml" in problems
    assert "c.yaml:4: network.cidr: 10.65.0.0/24 overlaps search's 10.65.0.0/24 (a.yaml:4)" in problems
    assert (
        spec.check_all(
            [
                a,
                spec.parse(
                    MINIMAL.replace("search", "maps").replace("10.65.0.0", "10.65.1.0"),
                    source="d.yaml",
                    platform=platform,
                ),
            ]
        )
        == []
    )


def test_a_committed_teams_range_is_not_free_for_a_new_team(tmp_path):
    """The pull-request check: a new team against every team already committed."""
    taken = spec.load_all()[0]
    new = write(tmp_path, "search.yaml", MINIMAL.replace("10.65.0.0/24", str(taken.cidr)))
    specs, problems = validate([new])
    assert [s.name for s in specs] == ["search"]
    line = next(i for i, text in enumerate(Path(taken.source).read_text().splitlines(), 1) if "cidr:" in text)
    # (a new team also needs its grant, infra/validate.py: not this test's subject)
    assert [p for p in problems if "network.cidr" in p] == [
        f"{new}:4: network.cidr: {taken.cidr} overlaps {taken.name}'s {taken.cidr} ({taken.source}:{line})"
    ]


# -- defaults by tier -------------------------------------------------------------------------------


def test_tier_defaults_fill_the_smallest_request(platform):
    path = spec.TEAMS_DIR / "growth.yaml"
    fields = [line for line in path.read_text().splitlines() if line.strip() and not line.startswith("#")]
    assert len(fields) == 4, fields
    growth = spec.load(path, platform)
    tier = TIERS[growth.tier]
    size = SIZES[tier["spark"]["size"]]
    assert growth.region == platform.region
    assert growth.spark == spec.SparkSpec(flavour=tier["spark"]["flavour"], size=tier["spark"]["size"], **size)
    # no topics in the spec: what infra/platform.yaml grants growth on playground (a public prefix,
    # and the topic growth owns), not every topic
    assert growth.kafka == (spec.KafkaRead("playground", False, ("sandbox-.*", "campaign-triggers")),)
    assert growth.checkpoint_retention_days == tier["checkpoints"]["retention_days"]
    assert growth.quota == spec.Quota(**tier["quota"])
    assert growth.labels == {}
    assert growth.all_labels == {"team": "growth", "tier": growth.tier, "managed-by": "daggers-infra"}


def test_a_field_in_the_spec_overrides_only_that_default(platform):
    fraud = spec.load(spec.TEAMS_DIR / "fraud.yaml", platform)
    size = SIZES["medium"]
    assert (fraud.spark.flavour, fraud.spark.workers) == ("vm", 6)
    assert (fraud.spark.worker_cores, fraud.spark.machine_type) == (size["worker_cores"], size["machine_type"])
    assert fraud.quota == spec.Quota(**TIERS["critical"]["quota"])
    assert fraud.kafka == (spec.KafkaRead("esb-critical", True, ("GO_.*-booking-log", "payment-.*")),)


def test_every_tiers_defaults_make_a_valid_spec(platform):
    for tier in TIERS:
        s = spec.parse(MINIMAL.replace("tier: standard", f"tier: {tier}"), source=SOURCE, platform=platform)
        assert s.spark.size == TIERS[tier]["spark"]["size"]


# -- sized for the team's peak rate (infra/throughput.json, measured by make bench) -----------------


def _measured() -> dict:
    return json.loads((spec.INFRA / "throughput.json").read_text())


def test_the_measured_table_gives_each_peak_enough_cores_and_not_one_more():
    doc = _measured()
    usable = doc["per_core_msgs_per_s"] * doc["efficiency"] * doc["utilisation"]
    assert doc["per_core_msgs_per_s"] > 0 and 0 < doc["efficiency"] <= 1 and 0 < doc["utilisation"] <= 1
    assert doc["measured"]["commit"] and doc["measured"]["by"].startswith("make bench")
    for row in doc["table"]:
        cores = row["executor_cores"]
        assert cores * usable >= row["peak_msgs_per_s"] > (cores - 1) * usable, row
        assert row["planned_for_msgs_per_s"] == math.floor(cores * usable)
    assert [r["executor_cores"] for r in doc["table"]] == sorted(r["executor_cores"] for r in doc["table"])


def test_the_sizing_page_shows_the_measured_table():
    from infra import sizing_reference

    assert sizing_reference.main(["--check"]) == 0, "run `python -m infra.sizing_reference` and commit the page"


@pytest.mark.parametrize("peak, worker_cores", [(1, 4), (120_000, 4), (900_000, 8), (3_000_000, 16)])
def test_a_stated_peak_sizes_the_workers_from_the_measured_rate(platform, peak, worker_cores):
    doc = _measured()
    cores = math.ceil(peak / (doc["per_core_msgs_per_s"] * doc["efficiency"] * doc["utilisation"]))
    text = MINIMAL.replace("tier: standard", "tier: critical") + (
        f"spark: {{peak_msgs_per_s: {peak}, worker_cores: {worker_cores}, worker_memory_gb: 32, "
        "machine_type: n2-standard-16}\n"
    )
    s = spec.parse(text, source=SOURCE, platform=platform)
    assert s.spark.workers == max(2, math.ceil(cores / worker_cores))  # never one worker alone
    assert s.spark.peak_msgs_per_s == peak


def test_workers_too_few_for_the_stated_peak_are_refused_with_how_many_would_do(platform):
    doc = _measured()
    usable = doc["per_core_msgs_per_s"] * doc["efficiency"] * doc["utilisation"]
    peak = math.ceil(usable * 4 * 3) + 1  # just over what 3 workers of 4 cores carry
    problem = one(refused(MINIMAL + f"spark: {{peak_msgs_per_s: {peak}, workers: 3, worker_cores: 4}}\n", platform))
    assert problem.startswith(f"{SOURCE}:5: spark.workers: 3 workers x 4 cores are planned for ")
    assert f"spark.peak_msgs_per_s {peak:,} needs {math.ceil(peak / usable)} cores: use workers >= 4" in problem
    enough = spec.parse(MINIMAL + f"spark: {{peak_msgs_per_s: {peak}, workers: 4, worker_cores: 4}}\n", source=SOURCE)
    assert enough.spark.workers == 4


@pytest.mark.parametrize("value", ["0", "-5", "fast", "1.5", "true", "1e5", "200000000"])
def test_a_peak_that_is_no_rate_is_refused_by_the_schema(value):
    problem = one(refused(MINIMAL + f"spark: {{peak_msgs_per_s: {value}}}\n"))
    assert "spark.peak_msgs_per_s" in problem


def test_a_peak_past_the_tiers_workers_is_refused_by_the_ceiling(platform):
    doc = _measured()
    usable = doc["per_core_msgs_per_s"] * doc["efficiency"] * doc["utilisation"]
    peak = math.ceil(usable * 4 * 5)  # 5 workers of 4 cores; experimental teams get 4 at most
    text = MINIMAL.replace("tier: standard", "tier: experimental").replace(
        "network:", "kafka: [{cluster: playground}]\nnetwork:"
    )
    problems = refused(text + f"spark: {{peak_msgs_per_s: {peak}, worker_cores: 4}}\n", platform)
    workers = math.ceil(math.ceil(peak / usable) / 4)
    assert workers > 4
    assert (
        f"{SOURCE}:6: spark.peak_msgs_per_s: {peak:,} msg/s needs {workers} workers of 4 cores at the measured "
        "rate (infra/throughput.json), more than the experimental tier's 4: ask for larger workers "
        "(spark.worker_cores), or for a higher tier"
    ) in problems, problems
    # said once: the workers are the peak's, so no second problem at spark.workers
    assert not [p for p in problems if "spark.workers:" in p], problems


# -- the committed specs ------------------------------------------------------------------------------


def test_every_committed_spec_validates():
    files = sorted(spec.TEAMS_DIR.glob("*.yaml"))
    specs = spec.load_all()
    assert [s.name for s in specs] == [f.stem for f in files]
    assert [s.source for s in specs] == [f"infra/teams/{f.name}" for f in files]


def test_the_sample_teams_exercise_both_flavours_and_every_tier():
    specs = spec.load_all()
    assert {s.spark.flavour for s in specs} == {"gke", "vm"}
    assert {s.tier for s in specs} == set(TIERS)


# -- lines, topic patterns, sizing (issue 9) ----------------------------------------------------------


def test_where_names_the_line_of_a_field_or_of_its_nearest_parent(platform):
    s = spec.parse(
        MINIMAL + "kafka:\n  - cluster: mainstream\n    topics:\n      - campaign-.*\nlabels: {cost_center: cc-1}\n",
        source=SOURCE,
        platform=platform,
    )
    assert s.where("network.cidr") == f"{SOURCE}:4: network.cidr"
    assert s.where("kafka[0].topics[0]") == f"{SOURCE}:8: kafka[0].topics[0]"
    assert s.where("kafka[0].mirrored") == f"{SOURCE}:6: kafka[0].mirrored"  # absent: its parent's line
    assert s.where("labels.cost_center") == f"{SOURCE}:9: labels.cost_center"
    assert s.where("quota.cpu") == f"{SOURCE}:1: quota.cpu"  # nothing present: line 1


def test_a_java_only_regex_is_refused_by_the_allow_list(platform):
    """\\p{Alpha} and possessive ++ are Java's dialect only: outside infra/topic_regex.py's allow-list,
    which both dialects read alike."""
    pattern = r"campaign-\p{Alpha}++"
    problem = one(refused(MINIMAL + f"kafka: [{{cluster: mainstream, topics: ['{pattern}']}}]\n", platform=platform))
    assert problem.startswith(f"{SOURCE}:5: kafka[0].topics[0]: {pattern!r} is refused: '\\p' is not allowed")


def test_a_yaml_indentation_error_names_its_line_and_says_how_to_fix_it():
    problem = one(refused(MINIMAL + "labels:\n  cost_center: cc-1\n team_lead: x\n"))
    assert problem.startswith(f"{SOURCE}:7: (yaml): not valid YAML: ")
    assert "indented less or more than the fields around it" in problem


def test_a_worker_too_small_for_the_spark_daemon_is_refused_saying_what_fits():
    # by hand: a 4 GB node keeps 1 GB (25%) + 100 MiB for GKE, 1024 MiB for daemonsets and 1536 MiB for
    # the worker daemon: 3072 - 100 - 1024 - 1536 = 412 MiB; 5 GB: 3.8 GB*1024 - 100 - 2560 = 1231 MiB
    problem = one(refused(MINIMAL + "spark: {worker_memory_gb: 4, worker_cores: 4, machine_type: e2-standard-4}\n"))
    assert problem.startswith(f"{SOURCE}:5: spark.worker_memory_gb: a worker of 4 GB leaves 412 MiB to executors")
    assert problem.endswith("use worker_memory_gb >= 5")


def test_a_real_region_is_accepted_and_a_made_up_one_refused(platform):
    s = spec.parse(MINIMAL + "region: europe-west10\nspark: {flavour: vm}\n", source=SOURCE, platform=platform)
    assert s.region == "europe-west10"
    problem = one(refused(MINIMAL + "region: atlantis-deep7\nspark: {flavour: vm}\n"))
    assert problem.startswith(f"{SOURCE}:5: region: 'atlantis-deep7' is not a GCP region; the regions: africa-south1")


def test_a_tier_ceiling_is_enforced_and_a_quota_within_it_accepted(platform):
    problem = one(refused(MINIMAL.replace("standard", "experimental") + "quota: {cpu: 33}\n"))
    assert problem == (
        f"{SOURCE}:5: quota.cpu: 33 CPUs is above the experimental tier's ceiling of 32 CPUs: "
        "ask for at most 32, or for a tier change"
    )
    assert (
        spec.parse(
            MINIMAL.replace("standard", "experimental") + "quota: {cpu: 32}\n", source=SOURCE, platform=platform
        ).quota.cpu
        == 32
    )


def test_the_default_topics_are_the_grants_not_everything(platform):
    s = spec.parse(MINIMAL, source=SOURCE, platform=platform)
    # search is in no readers list: on mainstream it gets the public campaign- prefix only
    assert s.kafka == (spec.KafkaRead("mainstream", True, ("campaign-.*",)),)


def test_a_cidr_that_is_no_subnet_is_refused_in_words_not_a_regex():
    problem = one(refused(MINIMAL.replace("10.65.0.0/24", "10.65.0.0/33")))
    assert "network.cidr: '10.65.0.0/33' does not match what this field takes" in problem
    assert "(IPv4, /16 to /24)" in problem and "[0-9]" not in problem
