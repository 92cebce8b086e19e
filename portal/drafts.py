"""A dagger written in the portal's three steps, as the job file `dagger deploy` reads. Pure: the
form's fields, the team's granted inputs and the platform's servers in; a job mapping out (or the
problems, each naming its field).

The analyst chooses from what the team may use and writes the query; everything else is the
platform's rule, never the form's: the stream reads as the team's Kafka principal with a consumer
group inside its prefix, a Kafka sink writes a topic under the team's prefix, the InfluxDB and
PostgreSQL sinks log in as the team's user to the team's database, secrets are ${VAR} references.
A hand-made request can name another team's input only to be refused: inputs are looked up among
the team's own.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import yaml

# a dagger named in the portal: it becomes part of topic and consumer-group names (no "--": the
# separator between a team and its own names)
DAGGER_NAME = re.compile(r"(?!.*--)[a-z][a-z0-9-]{1,62}[a-z0-9]")
TABLE = "data_stream"  # the table the query reads (raystack/dagger's convention)
SINK_TYPES = ("influx", "postgres", "kafka", "log")
# names a sink's form may give: InfluxDB measurements, PostgreSQL tables, a topic's suffix
SINK_NAME = re.compile(r"[a-z][a-z0-9_]{0,62}")
# a team's own topics are <team>--<name> (infra/topic_quota.py): no '--' in a name, so no team's
# topics lie inside another's ('growth--x' is growth's whatever other teams are called)
TOPIC_SUFFIX = re.compile(r"(?!.*--)[a-z0-9]([a-z0-9-]{0,98}[a-z0-9])?")
DURATION = re.compile(r"[1-9][0-9]{0,3}(s|m)")
MAX_QUERY = 20_000
MAX_PARALLELISM = 4


@dataclass(frozen=True)
class Input:
    """A catalogue topic the team may read and that says its message type: step 1's choices."""

    key: str  # "<catalogue cluster>/<label>": how the form names it
    cluster: str
    topic: str  # a name, or a prefix (then the analyst gives the rest)
    is_prefix: bool
    message: str
    event_time: str
    description: str
    owner: str


def inputs(catalogue: Iterable, team: str, clusters: Iterable[str]) -> list[Input]:
    """The entries of the catalogue (infra.topics.Topic) that `team` may read on the Kafka clusters
    its grant gives it, and whose message the catalogue names."""
    allowed = set(clusters)
    return [
        Input(
            f"{t.cluster}/{t.label}",
            t.cluster,
            t.value,
            t.is_prefix,
            t.message,
            t.event_time or "",
            t.description,
            t.owner,
        )
        for t in catalogue
        if t.cluster in allowed and t.message and t.event_time and t.readable_by(team)
    ]


@dataclass(frozen=True)
class Servers:
    """Where the platform's servers are for new daggers (the lab's, or a team's stack's)."""

    kafka: str  # bootstrap servers serving the catalogue's topics
    influx_url: str | None = None
    postgres: tuple[str, int] | None = None  # host, port


class DraftError(ValueError):
    def __init__(self, problems: list[dict]):
        self.problems = problems  # [{"field": ..., "message": ...}]
        super().__init__("; ".join(f"{p['field']}: {p['message']}" for p in problems))


def job(
    form: Mapping, *, team: str, granted: Iterable[Input], servers: Servers, rules, schema_version: str | None = None
) -> dict:
    """The job mapping for the form's fields (DraftError naming every wrong field). `rules` gives the
    platform's naming and credential rules: consumer_group(team, dagger), team_client(team),
    influx_sink(team, url, measurement), postgres_sink(team, host, port, table). `schema_version`
    pins the descriptor set the portal read the topics' fields from, so a later release of the
    protos cannot change what the dagger decodes (`dagger validate` warns of a job without one)."""
    problems: list[dict] = []

    def refuse(field: str, message: str) -> None:
        problems.append({"field": field, "message": message})

    name = form.get("name")
    if not isinstance(name, str) or not DAGGER_NAME.fullmatch(name):
        refuse("name", "a dagger's name: 3 to 64 lower-case letters, digits and single '-', starting with a letter")
        name = "draft"
    by_key = {i.key: i for i in granted}
    chosen = by_key.get(form.get("input")) if isinstance(form.get("input"), str) else None
    topic = None
    if chosen is None:
        refuse("input", "choose one of your team's topics")
    elif chosen.is_prefix:
        rest = form.get("topic_suffix")
        if not isinstance(rest, str) or not re.fullmatch(r"[A-Za-z0-9._-]{1,200}", rest):
            refuse("topic_suffix", f"the rest of the topic's name after {chosen.topic}")
        else:
            topic = chosen.topic + rest
    else:
        topic = chosen.topic
    query = form.get("query")
    if not isinstance(query, str) or not query.strip():
        refuse("query", "write the query")
    elif len(query) > MAX_QUERY:
        refuse("query", f"at most {MAX_QUERY} characters")
    delay = form.get("watermark_delay", "60s")
    if not isinstance(delay, str) or not DURATION.fullmatch(delay):
        refuse("watermark_delay", "a duration such as 60s or 3m")
    parallelism = form.get("parallelism", 1)
    if not isinstance(parallelism, int) or isinstance(parallelism, bool) or not 1 <= parallelism <= MAX_PARALLELISM:
        refuse("parallelism", f"a whole number from 1 to {MAX_PARALLELISM}")
    sink = _sink(form.get("sink"), team, name, servers, rules, refuse)
    if problems:
        raise DraftError(problems)
    job = {
        "name": name,
        "team": team,
        "description": f"written in the portal: {chosen.key}",
        "streams": [
            {
                "table": TABLE,
                "proto": chosen.message,
                "topics": [topic],
                "event_time": chosen.event_time,
                "kafka": {
                    "bootstrap_servers": servers.kafka,
                    "auto_offset_reset": "latest",
                    "group_id": rules.consumer_group(team, name),
                    "client": rules.team_client(team),
                },
            }
        ],
        "sql": query,
        "watermark_delay": delay,
        "parallelism": parallelism,
        "dead_letter_topic": f"{team}--{name}-dlq",
        "sink": sink,
    }
    if schema_version:
        job["schema"] = {"version": schema_version}
    return job


def _sink(raw, team: str, name: str, servers: Servers, rules, refuse) -> dict:
    if not isinstance(raw, Mapping) or raw.get("type") not in SINK_TYPES:
        refuse("sink.type", f"one of {', '.join(SINK_TYPES)}")
        return {"type": "log"}
    kind = raw["type"]
    target = raw.get("name")
    if kind == "log":
        return {"type": "log"}
    if kind == "kafka":
        if not isinstance(target, str) or not TOPIC_SUFFIX.fullmatch(target):
            refuse("sink.name", "the topic's name after your team's prefix: lower-case letters, digits and single '-'")
            target = "x"
        return {
            "type": "kafka",
            "kafka": {
                "brokers": servers.kafka,
                "topic": f"{team}--{target}",
                "data_type": "JSON",
                "client": rules.team_client(team),
            },
        }
    if not isinstance(target, str) or not SINK_NAME.fullmatch(target):
        what = "measurement" if kind == "influx" else "table"
        refuse("sink.name", f"the {what}'s name: lower-case letters, digits and '_', starting with a letter")
        target = "x"
    if kind == "influx":
        if not servers.influx_url:
            refuse("sink.type", "this platform has no InfluxDB")
            return {"type": "log"}
        return {"type": "influx", "influx": rules.influx_sink(team, servers.influx_url, target)}
    if not servers.postgres:
        refuse("sink.type", "this platform has no PostgreSQL")
        return {"type": "log"}
    return {"type": "postgres", "postgres": rules.postgres_sink(team, *servers.postgres, target)}


def editable(spec: str, spec_format: str) -> dict:
    """The dagger's current spec (its registry version) as a job mapping, if the portal can change
    its query (DraftError saying why not)."""
    if spec_format not in (".yaml", ".yml"):
        raise DraftError(
            [{"field": "", "message": "a dagger written as a .properties file is edited with `dagger edit`"}]
        )
    try:
        job = yaml.safe_load(spec)
    except yaml.YAMLError:
        job = None
    if not isinstance(job, dict) or not isinstance(job.get("sql"), str):
        raise DraftError([{"field": "", "message": "its spec has no query to edit here; use `dagger edit`"}])
    # checking the edit loads the spec in the portal's process: descriptors from anywhere but the
    # project's own registry (a Stencil URL: a file or a host the portal can reach) are not fetched here
    schema = job.get("schema")
    if schema is not None and (not isinstance(schema, dict) or set(schema) - {"version"}):
        raise DraftError(
            [
                {
                    "field": "",
                    "message": "its spec takes its message descriptors from a Stencil server; "
                    "change it with `dagger edit`",
                }
            ]
        )
    return job


def edited(spec: str, spec_format: str, form: Mapping) -> dict:
    """The current spec with the form's query and watermark delay: the only parts an edit in the
    portal changes, whoever wrote the rest (DraftError per field)."""
    job = editable(spec, spec_format)
    problems: list[dict] = []
    query = form.get("query")
    if not isinstance(query, str) or not query.strip():
        problems.append({"field": "query", "message": "write the query"})
    elif len(query) > MAX_QUERY:
        problems.append({"field": "query", "message": f"at most {MAX_QUERY} characters"})
    delay = form.get("watermark_delay", job.get("watermark_delay", "60s"))
    if not isinstance(delay, str) or not DURATION.fullmatch(delay):
        problems.append({"field": "watermark_delay", "message": "a duration such as 60s or 3m"})
    if problems:
        raise DraftError(problems)
    return {**job, "sql": query, "watermark_delay": delay}


class _SpecDumper(yaml.SafeDumper):
    """YAML as people write a job file: a multi-line query as a block, readable in the versions' diff."""


def _str(dumper, value: str):
    style = "|" if "\n" in value and not any(c in value for c in "\r\t") and value == value.rstrip(" ") else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_SpecDumper.add_representer(str, _str)


def spec_text(job: dict) -> str:
    """The job file for a job mapping (a YAML writer, never strings pasted together)."""
    return yaml.dump(job, Dumper=_SpecDumper, sort_keys=False, allow_unicode=True)
