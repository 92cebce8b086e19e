"""PySpark's callback server behind a token: a connection without it is closed before any call
runs, a connection with it is answered, and Spark's own callbacks (foreachBatch, the listener)
keep running, on a real local Spark session."""

from __future__ import annotations

import socket
import threading
import time
from types import SimpleNamespace

import pytest

from dagger_runtime.callbacks import CallbackAuthError, authenticate_callbacks

pytestmark = pytest.mark.spark


def exchange(port: int, lines: str) -> bytes:
    """What the server sends back for `lines`: its first two lines, or less if it closes or
    resets the connection first."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall(lines.encode())
        received = b""
        try:
            while received.count(b"\n") < 2 and (chunk := conn.recv(4096)):
                received += chunk
        except ConnectionResetError:
            pass
        return received


def test_the_callback_server_answers_only_with_its_token_and_spark_still_calls_back(spark):
    token = authenticate_callbacks(spark)
    assert authenticate_callbacks(spark) == token  # once per driver
    batches, progress = [], threading.Event()

    from pyspark.sql.streaming import StreamingQueryListener

    class Listener(StreamingQueryListener):
        def onQueryStarted(self, event):
            pass

        def onQueryProgress(self, event):
            progress.set()

        def onQueryIdle(self, event):
            pass

        def onQueryTerminated(self, event):
            pass

    listener = Listener()
    spark.streams.addListener(listener)
    query = (
        spark.readStream.format("rate")
        .option("rowsPerSecond", 10)
        .load()
        .writeStream.foreachBatch(lambda df, batch_id: batches.append(df.count()))
        .start()
    )
    try:
        deadline = time.monotonic() + 120
        while len(batches) < 2 and time.monotonic() < deadline:
            time.sleep(0.5)
        assert len(batches) >= 2, "Spark's callbacks stopped reaching the foreachBatch function"
        assert progress.wait(60), "the query listener was never called"
        server = spark.sparkContext._gateway._callback_server
        port, ids = server.port, list(server.pool.dict)
        assert ids, "no Python object is registered: nothing to call"
        calls = "".join(f"c\n{i}\nonQueryIdle\nn\ne\n" for i in ids)
        # without the token (and with a wrong one), the connection ends before any call runs
        assert exchange(port, calls) == b""
        assert exchange(port, f"A\n{'x' * len(token)}\ne\n{calls}") == b"!xn\n"  # py4j's refusal
        # positive control: the same call with the token is answered
        answer = exchange(port, f"A\n{token}\ne\nc\n{ids[0]}\nonQueryIdle\nn\ne\n")
        assert answer.startswith(b"!yv\n!"), answer
        before = len(batches)
        deadline = time.monotonic() + 60
        while len(batches) == before and time.monotonic() < deadline:
            time.sleep(0.5)
        assert len(batches) > before, "batches stopped after the probes"
        # what run() asks a failed query (whether its SparkContext was stopped under it) reaches the JVM
        assert query._jsq.sparkSession().sparkContext().isStopped() is False
    finally:
        query.stop()
        spark.streams.removeListener(listener)


def test_a_callback_server_started_without_a_token_is_refused():
    """Stopping a running server would drop the objects it serves, so the driver refuses to run."""
    gateway = SimpleNamespace(_callback_server=object(), callback_server_parameters=SimpleNamespace(auth_token=None))
    session = SimpleNamespace(sparkContext=SimpleNamespace(_gateway=gateway))
    with pytest.raises(CallbackAuthError, match="without an auth token"):
        authenticate_callbacks(session)
