"""The job file's reference (docs/reference/job-keys.md) and JSON Schema (job.schema.json) are
generated from the loader's list of keys and the model, are current, and agree with the loader:
every example job passes both, and each spelling the loader accepts or refuses the schema accepts
or refuses too. jsonschema (an independent validator) does the checking."""

from __future__ import annotations

import copy
import json

import pytest
import yaml
from jsonschema import Draft202012Validator

from dagger_runtime.config import ConfigError, load_job, reference
from dagger_runtime.config.native import _SECTIONS
from tests.kafka_jobs import EXAMPLES

VALIDATOR = Draft202012Validator(json.loads(reference.SCHEMA_FILE.read_text()))
JOBS = sorted(EXAMPLES.glob("*.yaml"))
# model fields no job file spells: set by the loader, or the secret half of `client`
NOT_KEYS = {"origin", "source_path", "warnings", "client_secrets"}


def test_the_committed_reference_and_schema_are_current():
    assert reference.main(["--check"]) == 0
    Draft202012Validator.check_schema(VALIDATOR.schema)


def test_every_model_field_has_a_key_and_every_key_a_meaning():
    for section, keys in _SECTIONS.items():
        fields = set(reference.MODELS[section].model_fields) - NOT_KEYS
        assert fields == {spec.field for spec in keys.values()}, section
        assert [key for key, spec in keys.items() if len(spec.doc) < 10] == [], section
    page = reference.KEYS_FILE.read_text()
    assert all(f"| `{key}` |" in page for keys in _SECTIONS.values() for key in keys)


@pytest.mark.parametrize("path", JOBS, ids=lambda p: p.name)
def test_every_example_job_passes_the_loader_and_the_schema(path):
    load_job(path)
    assert [e.message for e in VALIDATOR.iter_errors(yaml.safe_load(path.read_text()))] == []


def _variant(change) -> dict:
    job = yaml.safe_load((EXAMPLES / "completed_bookings_by_s2.yaml").read_text())
    job = copy.deepcopy(job)
    change(job)
    return job


ACCEPTED = {
    "lower-case enums": lambda j: (
        j["streams"][0].update(data_type="proto"),
        j["streams"][0]["kafka"].update(auto_offset_reset="EARLIEST"),
    ),
    "brokers as a list": lambda j: j["streams"][0]["kafka"].update(
        bootstrap_servers=["127.0.0.1:9092", "127.0.0.1:9093"]
    ),
    "event time by number": lambda j: j["streams"][0].update(event_time=5),
    "event time as a mapping": lambda j: j["streams"][0].update(event_time={"field_name": "event_timestamp"}),
    "a number written as text": lambda j: j.update(parallelism="2"),
    "the delay in milliseconds": lambda j: (j.pop("watermark_delay"), j.update(watermark_delay_ms=60000)),
    "a compound duration": lambda j: j.update(watermark_delay="1m30s"),
    "topics as one string": lambda j: j["streams"][0].update(topics="a-topic,b-topic"),
    "no name (the file's)": lambda j: j.pop("name"),
    "kafka client settings": lambda j: j["streams"][0]["kafka"].update(client={"security.protocol": "SASL_SSL"}),
}
REFUSED = {
    "a misspelt key": lambda j: j.update(sinks=j.pop("sink")),
    "a misspelt nested key": lambda j: j["sink"]["influx"].update(measurment_name="x"),
    "a duration without a unit": lambda j: j.update(watermark_delay=60),
    "a duration in an unknown unit": lambda j: j.update(watermark_delay="60 seconds"),
    "three streams": lambda j: j.update(streams=j["streams"] * 3),
    "no streams": lambda j: j.update(streams=[]),
    "no sql": lambda j: j.pop("sql"),
    "no sink": lambda j: j.pop("sink"),
    "an unknown sink type": lambda j: j["sink"].update(type="redis"),
    "an unknown data type": lambda j: j["streams"][0].update(data_type="AVRO"),
    "a stream without kafka": lambda j: j["streams"][0].pop("kafka"),
    "a list where a mapping goes": lambda j: j.update(schema=["4957b56c57da625e"]),
}


@pytest.mark.parametrize("name", ACCEPTED)
def test_a_spelling_the_loader_accepts_the_schema_accepts(name, tmp_path):
    job = _variant(ACCEPTED[name])
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(job, sort_keys=False))
    load_job(path)
    assert [e.message for e in VALIDATOR.iter_errors(job)] == []


@pytest.mark.parametrize("name", REFUSED)
def test_a_job_the_loader_refuses_for_its_shape_the_schema_refuses(name, tmp_path):
    job = _variant(REFUSED[name])
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(job, sort_keys=False))
    with pytest.raises(ConfigError):
        load_job(path)
    assert list(VALIDATOR.iter_errors(job)), f"the schema accepts {name}"
