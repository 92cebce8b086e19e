"""Errors raised by the protos package.

One base class so callers (the job validator, the CLI) can catch every schema
problem in one place and show its message as is: messages name the thing and
where it was looked for.
"""


class SchemaError(Exception):
    """A descriptor set, message or schema version is missing or unusable."""


class CompileError(SchemaError):
    """protoc rejected the .proto sources; the message carries protoc's output."""
