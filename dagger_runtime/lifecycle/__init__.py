"""The daggers' lifecycle on Spark standalone clusters: deploy, edit, stop, status, list, logs, history."""
