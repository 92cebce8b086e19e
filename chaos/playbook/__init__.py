"""Drill playbooks (chaos/drills/<drill>.yaml): LOKI's simulation document, plus what a failover
drill on the lab needs. `load(path)` refuses an invalid playbook before anything is touched, with
every problem as `file:line: field.path: message`.

    from chaos.playbook import load, PlaybookError
    try:
        drill = load("chaos/drills/kafka-failover.yaml")
    except PlaybookError as e:
        print("\\n".join(e.problems))

The format (YAML, or JSON: a `.json` file), compactly; durations are LOKI's "90s", "20m", "1h30m":

    name: kafka-failover                 # [a-z0-9][a-z0-9-]{0,62}: it names the run's directory
    description: the primary Kafka cluster is lost; the daggers move to the mirror
    topic: GO_RIDE-booking-log           # LOKI: default topic of feeders and consumers
    proto_schema: gojek.esb.booking.BookingLogMessage    # LOKI: their default message type
    feeders:                             # LOKI's {name, topic, count}, plus rate, shape, message, hints, key
      - {name: bookings, topic: GO_RIDE-booking-log, rate: 40, shape: constant, key: order_number}
    consumers:                           # LOKI's {topic, offset, count (groups), consumer_per_group, schema}
      - {topic: GO_RIDE-booking-log, offset: latest, count: 1, consumer_per_group: 2}
    daggers:                             # deployed at the start: a spec (relative to the repo) on a Spark cluster
      - {spec: examples/daggers/completed_bookings_by_s2.yaml, cluster: blue, name: surge-demand}
    chaos:                               # LOKI's list, plus fault, target, at
      - {name: primary lost, type: kafka, blast_radius: primary, failure_percentage: "100%",
         instance_recovery: "false", downtime: 3m, at: 2m}
    steady_state:                        # hypotheses: a probe, a tolerance in the probe's unit, phases
      - {probe: consumer_lag, tolerance: {max: 5000}, phases: [before, after]}
    safeguards:                          # a probe past its threshold aborts the run
      - {probe: disk_usage, abort_above: 90}
    failover: {kind: kafka, to: mirror, mode: auto, rto_target: 30s}   # fail_back: 10s moves them back
    verify:                              # the data verdict: the dagger's sink against what was fed
      - {dagger: surge-demand, window: 60s, keys: {tag_s2id: "s2id(lat, long, 13)"},
         measures: {num_of_bookings: count}, where: {status: COMPLETED}}
    timing: {warmup: 60s, settle: 60s, observe: 60s}

LOKI's top-level blast_radius, type, failure_percentage, data_disk_failure, instance_recovery and
downtime (its slide writes one case at the top level) are the defaults of every `chaos` entry; with
no `chaos` list they make the drill's one fault.

A chaos entry's `fault` (a kind of chaos/catalog.py) when it names none, from LOKI's fields:

    data_disk_failure "true"                     -> disk-break   (Kafka brokers only)
    type kafka, failure_percentage 100%          -> cluster-down
    type kafka, below 100% or broker ids         -> broker-stop  (that share of the brokers)
    type spark, failure_percentage 100%          -> spark-cluster-down
    type spark, below 100% or worker names       -> worker-kill
    type sink                                    -> sink-down

`target` is `CLUSTER` or `CLUSTER/INSTANCES`: `primary`, `primary/2`, `primary/1,3` (broker ids),
`blue`, `blue/spark-blue-worker`, `influxdb`, or a dagger's name for driver-kill; without it the
cluster is LOKI's blast_radius, else the drill's Kafka cluster (`cluster`, default primary), the
first dagger's Spark cluster, or the one sink the daggers write to. A share of instances is
ceil(n x failure_percentage / 100), at least one; which ones is chosen at run time with the seed.
`instance_recovery` false leaves the fault in place to the end of the drill (rolled back after
the verdict). `at` defaults to warm-up + 60s for the first entry, then to the end of the previous.

The drill's time line: 0 deploy and feed; `timing.warmup` steady state "before" checked up to the
first fault; "during" from the first fault to the end of the last downtime; "after" from `settle`
later for `observe`; then the verdict (chaos/plan.py lists every step).

Names, lines and values are checked against the lab: its inventory (playbooks/inventories/lab:
Kafka clusters and broker ids, Spark clusters, sinks, the topics its ACLs grant on each cluster),
the descriptor set (protos.registry.load()) and the dagger specs themselves.

The package: values.py (constants, the error, probes, scalar values), model.py (the pydantic
models), lab.py (the lab's inventory), checks.py (the checks across fields and against the lab),
loading.py (read, build, check, report).
"""

from __future__ import annotations

from .lab import Lab, lab_inventory
from .loading import load, parse, playbook_files
from .model import Fault, Playbook
from .values import (
    NAME,
    PLAYBOOKS_DIR,
    REPO,
    PlaybookError,
    duration,
    flag,
    fmt_duration,
    percentage,
)

__all__ = [
    "NAME",
    "PLAYBOOKS_DIR",
    "REPO",
    "Fault",
    "Lab",
    "Playbook",
    "PlaybookError",
    "duration",
    "flag",
    "fmt_duration",
    "lab_inventory",
    "load",
    "parse",
    "percentage",
    "playbook_files",
]
