"""The manual (docs/, mkdocs.yml) builds in strict mode: a link to a page or an anchor that is not
there, or a page left out of the navigation, fails the build. README.md, the front page, links
only to what exists."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def build(root: Path, out: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(root / "mkdocs.yml"), "-d", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )


def test_the_manual_builds_in_strict_mode_with_every_page_in_its_navigation(tmp_path):
    built = build(REPO, tmp_path / "site")
    assert built.returncode == 0, built.stderr[-3000:]
    assert "WARNING" not in built.stderr, built.stderr[-3000:]
    for page in ("analyst/write", "team/ask", "sre/drills", "platform/apply", "reference/flink-conformance"):
        assert (tmp_path / "site" / page / "index.html").exists(), page


def test_a_broken_link_or_anchor_fails_the_build(tmp_path):
    copy = tmp_path / "repo"
    shutil.copytree(REPO / "docs", copy / "docs")
    shutil.copy(REPO / "mkdocs.yml", copy / "mkdocs.yml")
    index = copy / "docs" / "index.md"
    for broken in ("[gone](no-such-page.md)", "[gone](sre/lab.md#no-such-heading)"):
        original = index.read_text()
        index.write_text(original + f"\n{broken}\n")
        built = build(copy, tmp_path / "site")
        index.write_text(original)
        assert built.returncode != 0 and "no-such" in built.stderr, broken


def test_the_front_page_is_short_and_links_only_to_what_exists():
    text = (REPO / "README.md").read_text()
    assert len(text.splitlines()) <= 250
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    local = [link for link in links if not re.match(r"[a-z]+://", link)]
    assert local, "the front page links into the manual"
    assert [link for link in local if not (REPO / link).exists()] == []
    for page in ("docs/analyst/write.md", "docs/team/ask.md", "docs/sre/lab.md", "docs/platform/apply.md"):
        assert page in local, f"the front page has no path to {page}"
