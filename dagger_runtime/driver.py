"""What spark-submit starts on a worker for a deployed dagger (cluster deploy mode, through
Spark's PythonRunner): `dagger run ...` with the cluster's runtime jars.

    driver.py JVM_DIR run JOB --checkpoint ... --master spark://...
"""
import os
import sys


def main() -> int:
    os.environ["DAGGER_JVM_DIR"] = sys.argv[1]
    from dagger_runtime.cli import main as cli

    return cli(sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
