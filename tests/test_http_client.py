"""The one HTTP client (dagger_runtime/http_client.py), against a real server on loopback: an answered
request is never sent twice (a 5xx could have acted), a 4xx or 5xx is an error that says which,
a server that does not answer in time is an error, a proxy from the environment never sees the
platform's calls, and basic auth goes in a header, not the URL."""

from __future__ import annotations

import base64
import os
import socket
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from urllib3.exceptions import ConnectTimeoutError, MaxRetryError, NewConnectionError, ReadTimeoutError

from dagger_runtime import http_client


class Server:
    def __init__(self, status: int = 200, delay_s: float = 0.0):
        self.requests: list[tuple[str, str, str | None]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's name
                outer.requests.append(("GET", self.path, self.headers.get("Authorization")))
                time.sleep(delay_s)
                body = b'{"ok": true}'
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def server(request):
    s = Server(**getattr(request, "param", {}))
    yield s
    s.close()


def test_an_answer_is_read_and_basic_auth_is_a_header(server):
    response = http_client.get(f"{server.url}/json/", params={"a": "b c"}, auth=("team", "s3cret"), timeout=5)
    assert response.json() == {"ok": True}
    ((method, path, authorization),) = server.requests
    assert (method, path) == ("GET", "/json/?a=b+c")
    assert authorization == "Basic " + base64.b64encode(b"team:s3cret").decode()


@pytest.mark.parametrize("server", [{"status": 503}], indirect=True)
def test_a_5xx_is_an_error_that_says_which_and_is_not_sent_again(server):
    with pytest.raises(http_client.HTTPError) as caught:
        http_client.get(f"{server.url}/metrics", timeout=5)
    assert caught.value.response.status_code == 503
    assert isinstance(caught.value, OSError)  # callers that caught urllib's errors as OSError still do
    assert len(server.requests) == 1


@pytest.mark.parametrize("server", [{"status": 403}], indirect=True)
def test_a_refusal_is_an_error(server):
    with pytest.raises(http_client.HTTPError) as caught:
        http_client.get(f"{server.url}/json/", timeout=5)
    assert caught.value.response.status_code == 403


@pytest.mark.parametrize("server", [{"delay_s": 3.0}], indirect=True)
def test_a_server_that_does_not_answer_in_time_is_an_error_and_is_not_asked_again(server):
    with pytest.raises(http_client.Error):
        http_client.get(f"{server.url}/slow", timeout=0.5)
    time.sleep(0.2)
    assert len(server.requests) == 1


def test_no_server_is_an_error_naming_the_address():
    with socket.socket() as s:  # a loopback port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(http_client.Error) as caught:
        http_client.get(f"http://127.0.0.1:{port}/ping", timeout=2)
    assert f"127.0.0.1', port={port}" in str(caught.value) or f"127.0.0.1:{port}" in str(caught.value)


def test_a_proxy_in_the_environment_never_sees_the_calls(server, monkeypatch):
    # a proxy that would take the request (and its login) elsewhere: nothing listens there
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("http_proxy", "http://127.0.0.1:9")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    assert http_client.get(f"{server.url}/ok", auth=("platform", "pw"), timeout=5).status_code == 200
    assert len(server.requests) == 1


def test_only_a_refused_connection_is_tried_again():
    """A refusal (a server restarting) is tried again, CONNECT_RETRIES times; a host that does not
    answer is not (every call would cost three timeouts), nor a request the server may have
    acted on (a read that timed out: a POST sent twice)."""
    retry = http_client.session().get_adapter("http://127.0.0.1/").max_retries
    refused = NewConnectionError(None, "Connection refused")
    for _ in range(http_client.CONNECT_RETRIES):
        retry = retry.increment("GET", "/x", error=refused)
    with pytest.raises(MaxRetryError):
        retry.increment("GET", "/x", error=refused)
    fresh = http_client.session().get_adapter("http://127.0.0.1/").max_retries
    with pytest.raises(MaxRetryError):
        fresh.increment("GET", "/x", error=ConnectTimeoutError("timed out"))
    for method in ("GET", "POST"):  # urllib3 raises the read's own error for a POST, else gives up
        with pytest.raises((MaxRetryError, ReadTimeoutError)):
            fresh.increment(method, "/x", error=ReadTimeoutError(None, "/x", "read timed out"))


def test_https_trusts_the_machines_certificate_authorities():
    verify = http_client.session().verify
    assert verify is not True and os.path.exists(verify), verify  # not certifi's bundle alone
    paths = ssl.get_default_verify_paths()
    assert verify in (
        paths.cafile,
        paths.openssl_cafile,
        paths.capath,
        paths.openssl_capath,
        "/etc/ssl/certs/ca-certificates.crt",
    )
