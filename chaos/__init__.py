"""Chaos and failover drills: faults with undo, drill playbooks, the resilience report."""
