"""Traffic for daggers: sample protobuf messages for the sample schemas, for previews, tests and load."""
