"""Throughput of the runtime's hot paths, measured against the machine's own limits."""
