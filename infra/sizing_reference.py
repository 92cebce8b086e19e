"""docs/reference/sizing.md from infra/throughput.json: the executor cores and workers a team's
peak rate gets, as infra/sizing.py computes them. `make bench` measures the rate and rewrites
both (bench/scaling.py); `python -m infra.sizing_reference --check` says whether the page is
current."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from dagger_runtime import generated_pages

from .sizing import MIN_WORKERS, THROUGHPUT_PATH, Throughput, workers_for
from .tiers import SIZES

PAGE = generated_pages.ROOT / "docs" / "reference" / "sizing.md"


def _rate(value) -> str:
    return f"{value:,}" if isinstance(value, int) else "(not measured)"


def page(path: Path = THROUGHPUT_PATH) -> str:
    doc = json.loads(path.read_text())
    measured = Throughput(doc["per_core_msgs_per_s"], doc["efficiency"], doc["utilisation"])
    m = doc["measured"]
    presets = sorted({(size["worker_cores"], name) for name, size in SIZES.items()})
    head = "| peak msg/s | executor cores | planned for msg/s | " + " | ".join(
        f"workers of {cores} cores ({name})" for cores, name in presets
    )
    rows = [head + " |", "|" + "---:|" * (3 + len(presets))]
    for row in doc["table"]:
        peak = row["peak_msgs_per_s"]
        workers = " | ".join(str(workers_for(peak, cores, measured)) for cores, _ in presets)
        rows.append(f"| {peak:,} | {row['executor_cores']} | {row['planned_for_msgs_per_s']:,} | {workers} |")
    return f"""# Spark sizing: a peak rate to executor cores

<!-- generated from infra/throughput.json by `python -m infra.sizing_reference`; `make bench` measures and rewrites both -->

A team spec may state its peak input rate over all its daggers, `spark.peak_msgs_per_s`
([ask for a platform](../team/ask.md)). Without `spark.workers`, the platform gives it the
workers this table gives; with `spark.workers`, a cluster too small for the peak is refused in
the pull request, with how many workers would do.

## What was measured

- **The dagger:** {m["dagger"]}.
- **Where:** {m["on"]}, by {m["by"]}, at commit `{m["commit"][:12]}` on {m["at"]}.
- **Rate per executor core:** {doc["per_core_msgs_per_s"]:,} msg/s: what one executor of one
  core did with each CPU-second it used (its JVM and its Python workers), reading the topic in
  batches of 100,000 messages, as a live dagger catching up a backlog does.
- **Efficiency of a second executor:** {doc["efficiency"]}: the messages a CPU-second with two
  executors of one core, over the same with one (at most 1).
- **On the lab's wall clock:** one executor sustained {_rate(m.get("one_executor_msgs_per_s"))}
  msg/s over its batches, two {_rate(m.get("two_executors_msgs_per_s"))}. The lab has
  {m.get("lab_cores", "a few")} cores, shared by the driver, the Kafka brokers and MirrorMaker: a
  second executor has no core of its own there, so its wall-clock speed-up says little of Spark,
  and the rate is counted per CPU-second instead.
- **Utilisation at the peak:** {doc["utilisation"]:.0%} of the cores: the rest catches up a
  backlog (after a failover or a sink outage) at least as fast again as the peak.

Executor cores = ceil(peak / (rate per core x efficiency x utilisation)); workers = ceil(executor
cores / worker cores), never fewer than {MIN_WORKERS} (one worker lost would stop every dagger).
Each dagger's driver takes one more core on a worker, and a dagger's executor sits on one worker
(its `parallelism` at most the worker's cores): a team of many daggers states `workers` itself.

## The table

{chr(10).join(rows)}
"""


def main(argv: list[str] | None = None) -> int:
    return generated_pages.main(
        argv,
        prog="python -m infra.sizing_reference",
        description="Write docs/reference/sizing.md from infra/throughput.json.",
        render=lambda: {PAGE: page()},
    )


if __name__ == "__main__":
    sys.exit(main())
