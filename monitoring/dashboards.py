"""Grafana dashboards for running daggers, built with grafana-foundation-sdk from the metrics that
dagger_runtime/metrics.py exposes. `python -m monitoring.dashboards --out DIR` writes them as JSON for
Grafana's file provisioning (or its HTTP API)."""

from __future__ import annotations

import argparse
import pathlib
import warnings

with warnings.catch_warnings():
    # The SDK deprecates the classic (v1) dashboard model for v2, which only Grafana 12's new
    # dashboard API loads; v1 is what file provisioning and every Grafana since 10 read.
    warnings.filterwarnings("ignore", "Prefer using dashboardv2", DeprecationWarning)
    from grafana_foundation_sdk.builders import dashboard, prometheus, stat, timeseries
    from grafana_foundation_sdk.builders.common import ReduceDataOptions, VizLegendOptions
    from grafana_foundation_sdk.cog.encoder import JSONEncoder
    from grafana_foundation_sdk.models.common import DataSourceRef, LegendDisplayMode, LegendPlacement
    from grafana_foundation_sdk.models.dashboard import (
        DashboardCursorSync,
        DashboardLinkType,
        VariableRefresh,
        VariableSort,
    )

# Every panel and query reads the Prometheus picked in the dashboard's `datasource` variable.
DATASOURCE = DataSourceRef(type_val="prometheus", uid="${datasource}")
# Prometheus scrapes each dagger with job="dagger" and adds team and cluster as target labels; the
# series themselves carry dagger.
TARGETS = 'job="dagger", team=~"$team", cluster=~"$cluster"'
DAGGERS = TARGETS + ', dagger=~"$dagger"'


def _sel(metric: str, scope: str) -> str:
    return f"{metric}{{{scope}}}"


def _rate(metric: str, scope: str) -> str:
    return f"rate({_sel(metric, scope)}[$__rate_interval])"


def _with_queries(panel, queries):
    """queries: (PromQL, legend) pairs."""
    for ref_id, (expr, legend) in zip("ABCDEFGH", queries):
        panel = panel.with_target(
            prometheus.Dataquery().datasource(DATASOURCE).ref_id(ref_id).expr(expr).legend_format(legend)
        )
    return panel


def graph(title: str, unit: str, *queries: tuple[str, str], span: int = 8) -> timeseries.Panel:
    panel = (
        timeseries.Panel()
        .title(title)
        .datasource(DATASOURCE)
        .unit(unit)
        .min(0)
        .span(span)
        .height(8)
        .legend(
            VizLegendOptions().show_legend(True).display_mode(LegendDisplayMode.LIST).placement(LegendPlacement.BOTTOM)
        )
    )
    return _with_queries(panel, queries)


def number(title: str, unit: str, expr: str) -> stat.Panel:
    panel = (
        stat.Panel()
        .title(title)
        .datasource(DATASOURCE)
        .unit(unit)
        .span(4)
        .height(4)
        .reduce_options(ReduceDataOptions().calcs(["lastNotNull"]))
    )
    return _with_queries(panel, [(expr, "")])


def _variable(name: str, query: str) -> dashboard.QueryVariable:
    return (
        dashboard.QueryVariable(name)
        .label(name.capitalize())
        .datasource(DATASOURCE)
        .query(query)
        .multi(True)
        .include_all(True)
        .refresh(VariableRefresh.ON_TIME_RANGE_CHANGED)
        .sort(VariableSort.ALPHABETICAL_ASC)
    )


VARIABLES = {
    "team": 'label_values(up{job="dagger"}, team)',
    "cluster": 'label_values(up{job="dagger", team=~"$team"}, cluster)',
    # `up` has no dagger label: only the dagger's own series do.
    "dagger": f"label_values({_sel('dagger_batches_total', TARGETS)}, dagger)",
}


def _board(title: str, uid: str, variables: list[str], items: list) -> dashboard.Dashboard:
    board = (
        dashboard.Dashboard(title)
        .uid(uid)
        .tags(["daggers", "generated"])
        # generated: edit monitoring/dashboards.py, not the dashboard in Grafana
        .readonly()
        .refresh("30s")
        .time("now-3h", "now")
        .timezone("browser")
        .tooltip(DashboardCursorSync.CROSSHAIR)
        .link(
            dashboard.DashboardLink("Daggers dashboards")
            .type(DashboardLinkType.DASHBOARDS)
            .tags(["daggers"])
            .as_dropdown(True)
            .include_vars(True)
            .keep_time(True)
        )
        .with_variable(dashboard.DatasourceVariable("datasource").label("Prometheus").type("prometheus"))
    )
    for name in variables:
        board = board.with_variable(_variable(name, VARIABLES[name]))
    # Grafana wants panel ids unique within a dashboard; rows are panels too.
    for panel_id, item in enumerate(items, start=1):
        item.id(panel_id)
        board = board.with_row(item) if isinstance(item, dashboard.Row) else board.with_panel(item)
    return board


def daggers() -> dashboard.Dashboard:
    """One row per dagger picked (the row repeats on `dagger`), its panels right after the row."""
    d = DAGGERS
    return _board(
        "Daggers",
        "daggers",
        ["team", "cluster", "dagger"],
        [
            dashboard.Row("$dagger").repeat("dagger"),
            graph(
                "Input and processed rate",
                "ops",
                (f"sum({_rate('dagger_input_messages_total', d)})", "read from Kafka"),
                (f"sum({_sel('dagger_processed_messages_per_second', d)})", "processed (last batch)"),
                (f"sum({_rate('dagger_result_rows_written_total', d)})", "result rows written"),
            ),
            graph(
                "Consumer lag",
                "short",
                (f"sum by (topic, partition) ({_sel('dagger_consumer_lag_messages', d)})", "{{topic}} [{{partition}}]"),
            ),
            # 0 until the query has a watermark (stateless queries never do)
            graph(
                "Watermark delay",
                "s",
                (f"time() - max({_sel('dagger_watermark_timestamp_seconds', d)} > 0)", "behind now"),
            ),
            graph("Batch duration", "s", (f"max({_sel('dagger_batch_duration_seconds', d)})", "last batch")),
            # 3 or more: --supervise keeps restarting a driver that fails before its first batch
            graph(
                "Launches without a committed batch",
                "short",
                (f"max({_sel('dagger_launches_without_commit', d)})", "this launch and the failed ones before it"),
            ),
            graph("Dead letters", "ops", (f"sum by (kind) ({_rate('dagger_dead_letters_total', d)})", "{{kind}}")),
            graph(
                "Sink errors",
                "ops",
                (f"sum({_rate('dagger_sink_errors_total', d)})", "failed writes"),
                (f"sum({_rate('dagger_sink_retries_total', d)})", "retries"),
            ),
        ],
    )


def team_cluster() -> dashboard.Dashboard:
    """Totals for the teams and clusters picked, then the same over time per team and cluster."""
    t = TARGETS
    by = "sum by (team, cluster)"
    return _board(
        "Team cluster",
        "daggers-team-cluster",
        ["team", "cluster"],
        [
            number("Targets up", "short", f"sum({_sel('up', t)})"),
            # running: completed a batch lately (the window of the DaggerNoBatches alert)
            number(
                "Daggers running",
                "short",
                f"count(sum by (team, cluster, dagger) (increase({_sel('dagger_batches_total', t)}[10m])) > 0)"
                " or vector(0)",
            ),
            number("Input rate", "ops", f"sum({_rate('dagger_input_messages_total', t)})"),
            number("Consumer lag", "short", f"sum({_sel('dagger_consumer_lag_messages', t)})"),
            # no series at all until a first dead letter or sink error: show 0, not "No data"
            number("Dead letters", "ops", f"sum({_rate('dagger_dead_letters_total', t)}) or vector(0)"),
            number("Sink errors", "ops", f"sum({_rate('dagger_sink_errors_total', t)}) or vector(0)"),
            graph("Targets up", "short", (f"{by} ({_sel('up', t)})", "{{team}} / {{cluster}}"), span=12),
            graph(
                "Input rate",
                "ops",
                (f"{by} ({_rate('dagger_input_messages_total', t)})", "{{team}} / {{cluster}}"),
                span=12,
            ),
            graph(
                "Consumer lag",
                "short",
                (
                    f"sum by (team, cluster, dagger) ({_sel('dagger_consumer_lag_messages', t)})",
                    "{{team}} / {{cluster}} / {{dagger}}",
                ),
                span=12,
            ),
            graph(
                "Dead letters",
                "ops",
                (
                    f"sum by (team, cluster, kind) ({_rate('dagger_dead_letters_total', t)})",
                    "{{team}} / {{cluster}}: {{kind}}",
                ),
                span=12,
            ),
            graph(
                "Sink errors",
                "ops",
                (
                    f"sum by (team, cluster, dagger) ({_rate('dagger_sink_errors_total', t)})",
                    "{{team}} / {{cluster}} / {{dagger}}",
                ),
                span=12,
            ),
        ],
    )


DASHBOARDS = {"daggers.json": daggers, "team-cluster.json": team_cluster}


def render(build) -> str:
    return JSONEncoder(sort_keys=True, indent=2).encode(build().build()) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m monitoring.dashboards", description="Write the daggers' Grafana dashboards as JSON files."
    )
    parser.add_argument(
        "--out",
        required=True,
        type=pathlib.Path,
        metavar="DIR",
        help=f"directory to write {' and '.join(DASHBOARDS)} to (created if missing)",
    )
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for name, build in DASHBOARDS.items():
        (args.out / name).write_text(render(build))
        print(args.out / name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
