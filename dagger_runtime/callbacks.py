"""PySpark's callback server, started with a token the JVM's client also holds.

A dagger's driver gives Spark two Python objects that the JVM calls back: the foreachBatch
function and the query listeners. PySpark serves them on a loopback port (Py4J's callback
server) that it opens without an auth token, so any local user, another team's driver
included, could connect and call their methods. Py4J's Python side can require a token, but
the JVM cannot send one: PySpark points the JVM at the server's port with
`GatewayServer.resetCallbackClient`, whose `PythonClient.copyWith` (py4j 0.10.9.x) builds the
new client without the token the old one held. So this module starts the server with a fresh
token and then gives the JVM a client built with the same token, in place of the copy.
"""

from __future__ import annotations

import secrets

# py4j's fields read and set by reflection (no getter or setter exists for them)
_CLIENT_FIELDS = ("customCommands", "minConnectionTime", "minConnectionTimeUnit", "socketFactory")


class CallbackAuthError(RuntimeError):
    """The callback server could not be put behind a token: no callback may run."""


def _field(jvm, cls_name: str, name: str):
    field = jvm.java.lang.Class.forName(cls_name).getDeclaredField(name)
    field.setAccessible(True)
    return field


def authenticate_callbacks(spark) -> str:
    """Start the driver's callback server behind a token (before any callback is registered).
    Returns the token (for tests); raises CallbackAuthError if a server is already running
    without one, since stopping it would drop the objects it serves."""
    from py4j.java_gateway import JavaObject
    from pyspark.java_gateway import ensure_callback_server_started

    gw = spark.sparkContext._gateway
    params = gw.callback_server_parameters
    running = gw.__dict__.get("_callback_server") is not None
    if running:
        if params.auth_token:
            return params.auth_token
        raise CallbackAuthError(
            "PySpark's callback server is already running without an auth token (something "
            "registered a listener or foreachBatch before the dagger's query); refusing to run "
            "callbacks that any local user could call"
        )
    token = secrets.token_urlsafe(32)
    params.auth_token = token
    ensure_callback_server_started(gw)  # PySpark's start: port 0, then resetCallbackClient
    jvm = gw.jvm
    server = JavaObject("GATEWAY_SERVER", gw._gateway_client)
    copy = server.getCallbackClient()
    if copy.getClass().getName() != "py4j.PythonClient":
        raise CallbackAuthError(f"unexpected Py4J callback client {copy.getClass().getName()}")
    values = {
        name: _field(jvm, "py4j.PythonClient" if name == "customCommands" else "py4j.CallbackClient", name).get(copy)
        for name in _CLIENT_FIELDS
    }
    client = jvm.py4j.PythonClient(
        copy.getGateway(),
        values["customCommands"],
        copy.getPort(),
        copy.getAddress(),
        values["minConnectionTime"],
        values["minConnectionTimeUnit"],
        values["socketFactory"],
        copy.getJavaServer(),
        copy.isMemoryManagementEnabled(),
        copy.getReadTimeout(),
        token,
    )
    _field(jvm, "py4j.Gateway", "cbClient").set(copy.getGateway(), client)
    copy.shutdown()
    if server.getCallbackClient().getPort() != copy.getPort():
        raise CallbackAuthError("the JVM's callback client was not replaced")
    return token
