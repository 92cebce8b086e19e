"""dagger_runtime.urls.carries_login: the one test of "a URL names a user" behind every refusal
(a job's schema URLs, protos.registry.fetch). Spelled as an attacker would try to slip one past."""

from __future__ import annotations

import pytest

from dagger_runtime.config._checks import stencil_url
from dagger_runtime.urls import carries_login
from protos.errors import SchemaError
from protos.registry import fetch


@pytest.mark.parametrize(
    "url",
    [
        "https://user:s3cret@stencil.example/a.desc",
        "https://token@stencil.example/a.desc",  # a user alone: a token is often given so
        "HTTPS://user:s3cret@stencil.example/a.desc",  # the scheme in capitals
        "  https://user:s3cret@stencil.example/a.desc",  # leading blanks
        "gs://user@bucket/a.desc",
        "http://user:p%40ss@host:8080",  # an escaped @ in the password, the real one after it
        "http://a@b@host/",  # two of them
        "http://@host/",  # an empty user
    ],
)
def test_a_url_that_names_a_user(url):
    assert carries_login(url)


@pytest.mark.parametrize(
    "url",
    [
        "https://stencil.example/a.desc",
        "https://stencil.example/people/@me/a.desc",  # @ in the path
        "https://stencil.example/a.desc?owner=a@b",  # in the query
        "https://stencil.example/a.desc#a@b",  # in the fragment
        "file:///tmp/a@b.desc",  # in a local file's name
        "/tmp/a@b.desc",  # a plain path
    ],
)
def test_a_url_that_does_not(url):
    assert not carries_login(url)


def test_a_job_and_a_descriptor_set_refuse_the_same_urls():
    """The two refusals share the test: a user alone is refused by both (the registry once asked
    urlsplit, the job's check its own pattern)."""
    url = "https://token@stencil.example/a.desc"
    with pytest.raises(ValueError, match="may not carry a login"):
        stencil_url(url)
    with pytest.raises(SchemaError, match="may not carry a login"):
        fetch(url)
