"""What spark-submit starts on a worker for a deployed dagger (cluster deploy mode, through
Spark's PythonRunner): `dagger run ...` with the cluster's runtime jars.

    driver.py JVM_DIR run JOB --checkpoint ... --master spark://...
"""

import os
import sys

# run as a script, its own folder is sys.path[0]: every module beside it would then be importable
# by its bare name and could hide a library's (a module named http once hid http.client from
# urllib3, and every driver died at start). The runtime is imported as the package it is.
if sys.path and os.path.realpath(sys.path[0] or ".") == os.path.dirname(os.path.realpath(__file__)):
    del sys.path[0]


def _authenticate() -> None:
    """On a cluster with spark.authenticate, the worker hands the driver the cluster's secret in
    _SPARK_AUTH_SECRET, which Spark's executors read, but a standalone driver's SparkContext insists
    on finding it in its conf (SecurityManager.initializeAuth), and the worker strips it from the
    driver's command line: put it in the driver JVM's own system properties, where no `ps` sees it."""
    secret = os.environ.get("_SPARK_AUTH_SECRET")
    if not secret or "PYSPARK_GATEWAY_PORT" not in os.environ:
        return
    from pyspark import SparkContext

    SparkContext._ensure_initialized()
    system = SparkContext._jvm.java.lang.System
    if system.getProperty("spark.authenticate", "false") == "true":
        system.setProperty("spark.authenticate.secret", secret)


def main() -> int:
    os.environ["DAGGER_JVM_DIR"] = sys.argv[1]
    _authenticate()
    from dagger_runtime.cli import main as cli

    return cli(sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
