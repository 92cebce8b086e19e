"""Signing in to the lab's Keycloak from Python as a browser does (the tests, the portal's bench):
its login page's form, and a cookie jar that holds loopback for a secure context (Keycloak's
cookies are Secure; a browser sends them to http://127.0.0.1, Python's cookie jar would not)."""

from __future__ import annotations

import http.cookiejar
import re
import urllib.parse
from html import unescape

import requests


class _LoopbackIsSecure(http.cookiejar.DefaultCookiePolicy):
    def return_ok_secure(self, cookie, request):
        return urllib.parse.urlsplit(request.get_full_url()).hostname in (
            "127.0.0.1",
            "localhost",
        ) or super().return_ok_secure(cookie, request)


class _Browser(requests.Session):
    """An HTTP session that, like a browser, treats loopback as a secure context: Keycloak's cookies
    are Secure, and a browser sends them to http://127.0.0.1 (Python's cookie jar would not)."""

    def __init__(self):
        super().__init__()
        self.cookies.set_policy(_LoopbackIsSecure())

    def prepare_request(self, request):
        prepared = super().prepare_request(request)  # its cookies chosen by a jar of the default policy
        prepared.headers.pop("Cookie", None)
        header = requests.cookies.get_cookie_header(self.cookies, prepared)
        if header:
            prepared.headers["Cookie"] = header
        return prepared


def browser() -> requests.Session:
    return _Browser()


def submit_login(session: requests.Session, page: requests.Response, user: str, password: str) -> requests.Response:
    """Fill in and send Keycloak's login form of `page`; the response, not followed."""
    form = re.search(r'<form[^>]*id="kc-form-login"[^>]*action="([^"]+)"', page.text)
    if not form:
        raise RuntimeError(f"no login form on the page ({page.status_code}): {page.text[:500]}")
    return session.post(
        unescape(form.group(1)),
        data={"username": user, "password": password, "credentialId": ""},
        timeout=30,
        allow_redirects=False,
    )


def submit_form(session: requests.Session, page: requests.Response) -> requests.Response:
    """Send the page's (first) form with its hidden fields, as a click on its button does."""
    form = re.search(r'<form[^>]*action="([^"]+)"[^>]*>(.*?)</form>', page.text, re.S)
    if not form:
        raise RuntimeError(f"no form on the page ({page.status_code}): {page.text[:500]}")
    fields = dict(re.findall(r'<input[^>]*type="hidden"[^>]*name="([^"]+)"[^>]*value="([^"]*)"', form.group(2)))
    button = re.search(r'<(?:button|input)[^>]*type="submit"[^>]*name="([^"]+)"[^>]*value="([^"]*)"', form.group(2))
    if button:
        fields[button.group(1)] = button.group(2)
    return session.post(
        urllib.parse.urljoin(page.url, unescape(form.group(1))),
        data={k: unescape(v) for k, v in fields.items()},
        timeout=30,
    )
