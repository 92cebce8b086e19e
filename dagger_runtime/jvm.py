"""Where the JVM parts live: fetched by `make jars` (Maven, pinned) into .jvm/ at the repo root."""

from __future__ import annotations

import os
from pathlib import Path

from .errors import SetupError

REPO_ROOT = Path(__file__).resolve().parent.parent

# Artifacts from jvm/spark/pom.xml that PySpark's own jars lack. Everything else Maven copies
# (scala-library, guava, lz4...) is already on PySpark's classpath, at the versions Spark wants.
_SPARK_EXTRAS = (
    "spark-sql-kafka-0-10_",
    "spark-token-provider-kafka-0-10_",
    "kafka-clients-",
    "commons-pool2-",
    "protobuf-java-",
    "protobuf-java-util-",
    "json-path-",
    "json-smart-",
    "accessors-smart-",
    "asm-",
    "s2-geometry-",
)


def jvm_dir() -> Path:
    """The directory `make jars` fills: $DAGGER_JVM_DIR, default <repo>/.jvm."""
    env = os.environ.get("DAGGER_JVM_DIR")
    return Path(env).expanduser().resolve() if env else REPO_ROOT / ".jvm"


def spark_jars() -> list[Path]:
    """Jars to add to a Spark session: the Kafka connector, protobuf-java, the runtime's decoder."""
    base = jvm_dir() / "spark"
    decoder = base / "dagger-runtime-jvm.jar"
    deps = sorted((base / "deps").glob("*.jar")) if (base / "deps").is_dir() else []
    picked = [p for p in deps if p.name.startswith(_SPARK_EXTRAS)]
    if not decoder.is_file() or len(picked) < len(_SPARK_EXTRAS):
        raise SetupError(
            f"the runtime's JVM parts are missing from {base} (found {len(picked)} of "
            f"{len(_SPARK_EXTRAS)} connector jars, decoder jar {'present' if decoder.is_file() else 'absent'}): "
            "run `make jars`"
        )
    return picked + [decoder]
