"""Monitoring as code for running daggers: Prometheus alert rules (rules/, tested with promtool) and
the Grafana dashboards that `python -m monitoring.dashboards --out DIR` generates."""
