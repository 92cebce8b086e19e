"""The playbooks' filter plugins, loaded by path as Ansible loads them: putting their directory on
sys.path would let a plugin's file name shadow a project package for the rest of the test worker."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

DIRECTORY = Path(__file__).resolve().parent.parent / "playbooks" / "filter_plugins"


def plugin(name: str) -> ModuleType:
    """playbooks/filter_plugins/<name>.py as a module named ansible_filter_<name>."""
    spec = importlib.util.spec_from_file_location(f"ansible_filter_{name}", DIRECTORY / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
