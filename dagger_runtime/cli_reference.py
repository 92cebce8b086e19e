"""Every command under `dagger`, with the options its parser declares: docs/reference/commands.md.

The tree is read from the parsers themselves (each group's module builds its own; its subcommands
are its parser's), and each page section is what `dagger … --help` prints, at a fixed width of
100 columns so the page does not depend on the terminal that wrote it.

`python -m dagger_runtime.cli_reference` writes the page; `--check` says whether the committed
one is current (tests/test_cli_reference.py runs it).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

from dagger_runtime import cli, generated_pages

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "reference" / "commands.md"
WIDTH = "100"
# subcommands whose options another module parses (argparse hands it the rest of the line)
DELEGATED = {("drill", "history")}


def _module_parser(module: str, prog: str) -> argparse.ArgumentParser:
    """The parser a group's module builds (each has a build_parser(prog) its main parses with)."""
    return importlib.import_module(module).build_parser(prog)


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:  # argparse keeps no public list of a parser's subcommands
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def commands() -> Iterator[tuple[str, ...]]:
    """Every command path under dagger, in the order `--help` lists them: () is dagger itself."""
    yield ()
    for name, sub in _subcommands(cli.build_parser()).items():
        if name in cli.GROUPS:
            yield from _group((name,), cli.GROUPS[name][0])
        else:
            yield from _walk((name,), sub)


def _group(path: tuple[str, ...], target) -> Iterator[tuple[str, ...]]:
    if isinstance(target, str):
        yield from _walk(path, _module_parser(target, "dagger " + " ".join(path)))
        return
    yield path
    for name, (sub, _) in target.items():
        yield from _group((*path, name), sub)


def _walk(path: tuple[str, ...], parser: argparse.ArgumentParser) -> Iterator[tuple[str, ...]]:
    yield path
    if path in DELEGATED:
        return
    for name, sub in _subcommands(parser).items():
        yield from _walk((*path, name), sub)


def help_text(path: tuple[str, ...]) -> str:
    """What `dagger PATH --help` prints, at the page's width."""
    out = io.StringIO()
    with mock.patch.dict(os.environ, {"COLUMNS": WIDTH}), contextlib.redirect_stdout(out):
        try:
            code = cli.main([*path, "--help"], warm=False)
        except SystemExit as e:
            code = e.code
    if code not in (0, None):
        raise RuntimeError(f"dagger {' '.join(path)} --help exited {code}")
    return out.getvalue().rstrip() + "\n"


def render() -> str:
    paths = list(commands())
    lines = [
        "# Commands",
        "",
        "Every command under `dagger`, as its `--help` prints it. Generated from the parsers by",
        "`python -m dagger_runtime.cli_reference`; do not edit by hand. Exit codes: [exit codes](exit-codes.md).",
        "",
    ]
    for path in paths[1:]:
        indent = "  " * (len(path) - 1)
        lines.append(f"{indent}- [`dagger {' '.join(path)}`](#{_anchor(path)})")
    for path in paths:
        lines += ["", f"## dagger {' '.join(path)}".rstrip(), "", "```text", help_text(path).rstrip(), "```"]
    return "\n".join(lines) + "\n"


def _anchor(path: tuple[str, ...]) -> str:
    """mkdocs' (Python-Markdown toc's) slug of the section's heading."""
    return "-".join(("dagger", *path)).lower()


def main(argv: list[str] | None = None) -> int:
    return generated_pages.main(
        argv,
        prog="python -m dagger_runtime.cli_reference",
        description="Write docs/reference/commands.md from the commands' parsers.",
        render=lambda: {PAGE: render()},
    )


if __name__ == "__main__":
    sys.exit(main())
