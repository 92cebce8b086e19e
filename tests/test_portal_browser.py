"""The portal in a real browser: Debian's chromium, driven by Selenium through Debian's chromedriver,
on the lab. An analyst signs in through Keycloak's page, lands on the team's daggers, reads one
whose query holds a script (shown as text, never run), and cannot open another team's dagger."""
from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import pytest

from dagger_runtime.lifecycle.registry import Registry
from lab import access

pytestmark = [pytest.mark.e2e]

SCRIPT = "<script>window.__pwned = 1</script>"


@pytest.fixture(scope="module")
def chromium():
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = shutil.which("chromium")
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,900"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def probes(lab_env):
    """A stopped dagger of each team in the lab's registry; allocations' query holds a script."""
    registry = Registry((Path(lab_env["DAGGER_LAB_DIR"]) / "secrets" / "registry.url").read_text().strip())
    names = {}
    for team in ("allocations", "api-health"):
        name = f"browser-probe-{team}-{uuid.uuid4().hex[:6]}"
        registry.record_version(name=name, team=team, cluster="blue", spec=f"name: {name}\nsql: SELECT 1 -- {SCRIPT}\n",
                                spec_format=".yaml", spec_digest="0" * 64, state_key="k", checkpoint=f"/nowhere/{name}",
                                start="latest", actor="test", submission_id=None, metrics_port=None, action="deploy")
        registry.record_status(name, "STOPPED", actor="test", action="stop")
        names[team] = name
    yield names
    registry.close()


def _wait(driver, condition, timeout=60):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout).until(condition)


def test_an_analyst_signs_in_in_chromium_and_sees_scripts_as_text_and_nothing_of_another_team(
        lab_env, chromium, probes):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec

    base = int(lab_env["DAGGER_LAB_PORT_BASE"])
    portal = f"http://127.0.0.1:{base + 4080}"
    user = access.analyst("allocations")
    chromium.get(portal + "/")
    chromium.find_element(By.LINK_TEXT, "Sign in").click()
    _wait(chromium, ec.presence_of_element_located((By.ID, "username")))
    assert chromium.current_url.startswith(f"http://127.0.0.1:{base + 4180}/realms/daggers/")
    chromium.find_element(By.ID, "username").send_keys(user)
    chromium.find_element(By.ID, "password").send_keys(access.sign_in_password(user, Path(lab_env["DAGGER_LAB_DIR"])))
    chromium.find_element(By.ID, "kc-login").click()
    _wait(chromium, ec.url_to_be(f"{portal}/daggers"))
    assert chromium.find_element(By.CSS_SELECTOR, "header .who").get_attribute("data-user") == user

    # its own dagger, whose query holds a script: shown as text, not run
    chromium.get(f"{portal}/daggers/{probes['allocations']}")
    assert SCRIPT in chromium.find_element(By.CSS_SELECTOR, "pre.spec").text
    assert chromium.execute_script("return window.__pwned") is None
    # another team's: not found, and nothing of it on the page
    chromium.get(f"{portal}/daggers/{probes['api-health']}")
    body = chromium.find_element(By.TAG_NAME, "body").text
    assert "Not found." in body and probes["api-health"] not in chromium.page_source

    # signing out ends the provider's session too: the next sign-in asks for the password again
    chromium.get(f"{portal}/daggers")
    chromium.find_element(By.CSS_SELECTOR, "header form button[type=submit]").click()
    _wait(chromium, ec.presence_of_element_located((By.ID, "kc-logout")))
    chromium.find_element(By.ID, "kc-logout").click()
    _wait(chromium, ec.url_to_be(f"{portal}/"))
    chromium.find_element(By.LINK_TEXT, "Sign in").click()
    _wait(chromium, ec.presence_of_element_located((By.ID, "username")))
