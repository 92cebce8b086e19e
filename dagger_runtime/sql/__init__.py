"""The dagger SQL dialect (Flink/Calcite, as analysts write it) translated to Spark SQL."""
from .translate import Translation, translate

__all__ = ["Translation", "translate"]
