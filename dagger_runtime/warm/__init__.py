"""A warm Spark process for validate and preview: `dagger warm start` (see warm.cli)."""
