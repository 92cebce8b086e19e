"""House rules a reviewer would otherwise have to remember: the runtime's modules import each other
without circles (every import counted, those inside functions too), and the analyst's runtime
needs nothing of the platform's infrastructure code (infra/, Pulumi)."""

from __future__ import annotations

import ast
import fnmatch
import json
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ["dagger_runtime", "protos", "loadtest", "chaos", "infra", "lab", "portal", "monitoring", "bench"]


def modules(package: str) -> dict[str, Path]:
    out = {}
    for path in (ROOT / package).rglob("*.py"):
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        out[name.removesuffix(".__init__")] = path
    return out


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The known modules `name` imports, wherever in the file (a lazy import is still an edge)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = name.split(".")
                keep = len(parts) - node.level + (1 if path.name == "__init__.py" else 0)
                base = ".".join(parts[:keep] + ([node.module] if node.module else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_cycle_finder_finds_a_circle_through_a_lazy_import(tmp_path, monkeypatch):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "a.py").write_text("from . import b\n")
    (tmp_path / "pkg" / "b.py").write_text("def f():\n    from .a import x\n")
    (tmp_path / "pkg" / "c.py").write_text("import pkg.a\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    known = modules("pkg")
    assert cycles({m: imports(m, p, known) for m, p in known.items()}) == [["pkg.a", "pkg.b"]]


def test_the_runtime_imports_without_circles():
    known = {}
    for package in PACKAGES:
        known.update(modules(package))
    graph = {m: imports(m, p, known) for m, p in known.items()}
    runtime = {m: deps for m, deps in graph.items() if m.startswith("dagger_runtime")}
    assert cycles({m: {d for d in deps if d in runtime} for m, deps in runtime.items()}) == []


def test_the_runtime_needs_nothing_of_the_infrastructure_code():
    """What an analyst's commands load (validate, preview, run, the lifecycle, the warm process)
    holds no module of infra/ and not Pulumi: the runtime installs without the platform's tools."""
    probe = (
        "import json, sys\n"
        "import dagger_runtime.cli, dagger_runtime.run, dagger_runtime.preview, dagger_runtime.validate\n"
        "import dagger_runtime.lifecycle.cli, dagger_runtime.warm.server\n"
        "from dagger_runtime.config import load_job\n"
        "load_job('examples/daggers/completed_bookings_by_s2.yaml')\n"
        "load_job('examples/daggers/supply_per_minute.properties')\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    loaded = json.loads(proc.stdout.splitlines()[-1])
    assert [m for m in loaded if m.split(".")[0] in ("infra", "pulumi", "pulumi_gcp", "pulumi_kubernetes")] == []
    assert "dagger_runtime.config.native" in loaded  # the probe did load the job files


# Every file beside the modules of an installed package is packaged (an install, not an editable
# one as on a cluster's or a VM's venv, has only what pyproject.toml's package-data names), but
# these, which stay in the checkout, each for its reason:
CHECKOUT_ONLY = {
    "bench/results/": "the bench's results history, written and read in the checkout",
    "infra/": "the Pulumi project and the teams' specs: `pulumi up` and the pull requests run there",
    "portal/web/": "the portal's sources, built into portal/static/ (which is packaged)",
}


def test_every_data_file_beside_the_code_is_in_the_installed_package():
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    packages = [p.rstrip("*") for p in setuptools["packages"]["find"]["include"]]
    globs = setuptools["package-data"]
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    left_out = []
    for f in tracked.splitlines():
        package = f.split("/")[0]
        if package not in packages or f.endswith(".py") or f.startswith(tuple(CHECKOUT_ONLY)):
            continue
        if not any(fnmatch.fnmatch(f.removeprefix(f"{package}/"), g) for g in globs.get(package, [])):
            left_out.append(f)
    assert left_out == [], f"neither in [tool.setuptools.package-data] nor CHECKOUT_ONLY: {left_out}"


def test_the_checkout_only_folders_hold_files():
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    for folder in CHECKOUT_ONLY:
        assert any(f.startswith(folder) for f in tracked.splitlines()), f"{folder} holds no file: is the list stale?"


def test_no_runtime_module_is_named_as_a_standard_library_module():
    # the drivers run dagger_runtime/driver.py as a script (spark-submit), so its folder leads
    # sys.path: dagger_runtime/http.py once hid http.client, and every driver died at its start
    names = {p.stem for p in (ROOT / "dagger_runtime").glob("*.py")}
    names |= {p.name for p in (ROOT / "dagger_runtime").iterdir() if (p / "__init__.py").exists()}
    assert sorted(names & sys.stdlib_module_names) == []


def test_the_driver_script_leaves_its_own_folder_off_sys_path(tmp_path):
    # were a module named as a library ever beside driver.py, spark-submit's way of running it
    # (a script, so its folder first on sys.path) must still import the library
    folder = tmp_path / "runtime"
    folder.mkdir()
    (folder / "driver.py").write_text((ROOT / "dagger_runtime" / "driver.py").read_text())
    for shadow in ("json", "http"):
        (folder / f"{shadow}.py").write_text(f"raise ImportError('{shadow} hidden by the driver folder')\n")
    done = subprocess.run(
        [sys.executable, str(folder / "driver.py"), "/nonexistent-jvm-dir", "--version"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "hidden by the driver folder" not in done.stderr
    assert done.stdout.startswith("dagger "), done.stdout
