"""Every HTTP call the platform makes from Python: Spark's master and worker pages, the drivers'
/metrics, InfluxDB's query API, descriptor sets, Prometheus. One client, requests (authlib's
sign-in in the portal uses it too), set up once: a timeout on every call, a refused connection
tried again twice (never a request the server has answered: that could act twice), no
proxy or .netrc from the environment (the calls carry the platform's logins and stay on the
platform's own addresses), the machine's certificate authorities trusted for https."""

from __future__ import annotations

import functools
import os
import ssl

import requests
from requests.adapters import HTTPAdapter
from urllib3.exceptions import ConnectTimeoutError, NewConnectionError
from urllib3.util.retry import Retry

# what any call here raises when there is no answer, or an answer of 4xx or 5xx (an OSError, so
# callers that caught urllib's errors as OSError still do)
Error = requests.RequestException
HTTPError = requests.HTTPError  # an answer of 4xx or 5xx (its .response says which)
CONNECT_RETRIES = 2


class _RefusedOnly(Retry):
    """Tries a connection again when it was refused (a server restarting), not when it timed out:
    a host that does not answer would otherwise cost every call three times its timeout (urllib3
    counts a refusal as a kind of connect timeout)."""

    def increment(self, method=None, url=None, response=None, error=None, _pool=None, _stacktrace=None):
        if isinstance(error, ConnectTimeoutError) and not isinstance(error, NewConnectionError):
            exhausted = self.new(total=0, connect=0)
            return Retry.increment(exhausted, method, url, response, error, _pool, _stacktrace)
        return super().increment(method, url, response, error, _pool, _stacktrace)


@functools.cache  # the machine's store does not move while a process runs: looked up once
def system_certificates() -> str | bool:
    """The machine's own certificate authorities (SSL_CERT_FILE, then OpenSSL's default file or
    folder), as urllib used them; requests would otherwise trust certifi's bundle only, and a
    platform behind an internal authority would fail."""
    paths = ssl.get_default_verify_paths()
    for candidate in (paths.cafile, paths.openssl_cafile, "/etc/ssl/certs/ca-certificates.crt"):
        if candidate and os.path.isfile(candidate):
            return candidate
    for folder in (paths.capath, paths.openssl_capath):
        if folder and os.path.isdir(folder):
            return folder
    return True


def session(auth: tuple[str, str] | None = None) -> requests.Session:
    """A session with the house's settings; `auth`: (user, password), sent as HTTP basic auth."""
    s = requests.Session()
    s.trust_env = False
    s.verify = system_certificates()
    retry = _RefusedOnly(
        total=CONNECT_RETRIES,
        connect=CONNECT_RETRIES,
        read=0,
        status=0,
        other=0,
        redirect=0,
        backoff_factor=0.2,
        raise_on_status=False,
    )
    adapter = HTTPAdapter(max_retries=retry)
    s.mount("http://", adapter)
    s.mount("https://", adapter)
    if auth is not None:
        s.auth = auth
    return s


def request(
    method: str,
    url: str,
    *,
    timeout: float,
    params: dict | None = None,
    data: dict | bytes | None = None,
    headers: dict | None = None,
    auth: tuple[str, str] | None = None,
) -> requests.Response:
    """One call, its answer read whole; raises Error for no answer or a 4xx or 5xx answer."""
    with session(auth) as s:
        response = s.request(method, url, params=params, data=data, headers=headers, timeout=timeout)
    response.raise_for_status()
    return response


def get(url: str, *, timeout: float, **options) -> requests.Response:
    return request("GET", url, timeout=timeout, **options)


def post(url: str, *, timeout: float, **options) -> requests.Response:
    return request("POST", url, timeout=timeout, **options)
