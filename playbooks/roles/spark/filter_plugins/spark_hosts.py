"""Which hosts make one Spark cluster: with a team per cluster (the lab's blue and green hold one
cluster per team), the hosts of a cluster's inventory group that share its spark_team; and each
cluster's id for its secrets (blue, or blue.<team>). A host without spark_team belongs to the
cluster any team's daggers may run on."""

from __future__ import annotations


def _team(host) -> str:
    return str(host.get("spark_team") or "")


def spark_team_hosts(hosts, team: str = "") -> list:
    return [h for h in hosts if _team(h) == str(team or "")]


def spark_cluster_ids(hosts) -> list[str]:
    return [h["spark_cluster"] + ("." + _team(h) if _team(h) else "") for h in hosts]


def spark_service_name(host) -> str:
    """spark-<cluster>[-<team>]-<role>: the supervisord program or systemd unit of a host."""
    return "-".join(["spark", host["spark_cluster"], *([_team(host)] if _team(host) else []), host["spark_role"]])


class FilterModule:
    def filters(self):
        return {
            "spark_team_hosts": spark_team_hosts,
            "spark_cluster_ids": spark_cluster_ids,
            "spark_service_name": spark_service_name,
        }
