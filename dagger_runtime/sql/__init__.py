"""The dagger SQL dialect (Flink/Calcite, as analysts write it) translated to Spark SQL."""

from . import catalog, flink, flink_json  # noqa: F401  (each registers its functions in functions.py)
from .translate import Translation, translate

__all__ = ["Translation", "translate"]
