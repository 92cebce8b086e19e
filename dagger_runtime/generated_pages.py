"""The command line every generated page shares: write the pages, or with --check say which of
the committed ones are out of date (exit 1), writing nothing. Used by the job keys' reference,
the commands' reference and the metrics' reference."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None, *, prog: str, description: str, render: Callable[[], dict[Path, str]]) -> int:
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--check", action="store_true", help="only say whether the committed pages are current")
    args = parser.parse_args(argv)
    pages = render()
    stale = [path for path, text in pages.items() if not path.exists() or path.read_text() != text]
    if args.check:
        for path in stale:
            print(f"{path.relative_to(ROOT)} is out of date: {prog}", file=sys.stderr)
        return 1 if stale else 0
    for path, text in pages.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        print(f"wrote {path.relative_to(ROOT)}", file=sys.stderr)
    return 0
