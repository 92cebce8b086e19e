"""Every HTTP call the platform makes from Python: Spark's master and worker pages, the drivers'
/metrics, InfluxDB's query API, descriptor sets, Prometheus. One client, requests (authlib's
sign-in in the portal uses it too), set up once: a timeout on every call, a refused or dropped
connection tried again twice (never a request the server has answered: that could act twice), no
proxy or .netrc from the environment (the calls carry the platform's logins and stay on the
platform's own addresses)."""

from __future__ import annotations

import requests
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

# what any call here raises when there is no answer, or an answer of 4xx or 5xx (an OSError, so
# callers that caught urllib's errors as OSError still do)
Error = requests.RequestException
HTTPError = requests.HTTPError  # an answer of 4xx or 5xx (its .response says which)
CONNECT_RETRIES = 2


def session(auth: tuple[str, str] | None = None) -> requests.Session:
    """A session with the house's settings; `auth`: (user, password), sent as HTTP basic auth."""
    s = requests.Session()
    s.trust_env = False
    retry = Retry(
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
