"""Traffic for daggers: sample protobuf messages for the sample schemas, for previews, tests and load.

traffic (the sample schemas' events), feeder (a topic filled fast, through Spark); for drills:
generator (any message of a descriptor set, steered by hints), ledger (every delivery, and the
expected aggregates), producer, recording (record and replay), shapes and locustfile (locust).
`python -m loadtest --help`.
"""
