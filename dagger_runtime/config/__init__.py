"""Job configuration: one file per dagger, YAML (native) or raystack/dagger properties.

    from dagger_runtime.config import load_job, ConfigError

    try:
        job = load_job("jobs/completed-bookings.yaml")
    except ConfigError as error:
        print(error)            # every problem, one per line, naming file and field
    print(job.redacted())       # secrets shown as '***'

The native format is documented in ``dagger_runtime.config.native``, the
properties keys and dagger's defaults in ``dagger_runtime.config.dagger_properties``.
Loading is pure: it reads the one file (and the environment for ``${VAR}``
secrets), logs nothing and changes no global state.
"""

from dagger_runtime.config.errors import ConfigError, DaggerError
from dagger_runtime.config.loader import detect_format, load_job, loads_job
from dagger_runtime.config.model import (
    EventTime,
    InfluxSinkSpec,
    JobSpec,
    KafkaSinkSpec,
    KafkaSourceSpec,
    PostgresSinkSpec,
    SchemaSpec,
    SinkSpec,
    StreamSpec,
)

__all__ = [
    "ConfigError",
    "DaggerError",
    "EventTime",
    "InfluxSinkSpec",
    "JobSpec",
    "KafkaSinkSpec",
    "KafkaSourceSpec",
    "PostgresSinkSpec",
    "SchemaSpec",
    "SinkSpec",
    "StreamSpec",
    "detect_format",
    "load_job",
    "loads_job",
]
