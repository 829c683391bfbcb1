"""The library's shape: layers that import only downwards, no import cycle, no web or SQL code,
and one source for every reported objective (``docs/design.md`` section 3.1)."""

from __future__ import annotations

import ast
import json
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from shared_data import load

import solvers
from solvers.models import LinearModel
from solvers.registry import FAMILIES

SOLVERS_DIR = Path(solvers.__file__).resolve().parent

# docs/design.md section 3.1: core <- data, losses <- problems <- base types <- multiclass <-
# families <- registry <- train.  A module may import its own layer and the ones below it
# (the leaves -- tunables, termination codes, the monitor protocol -- from anywhere).
LAYERS = {
    "solvers.config": 0,
    # the termination codes and the gap's round-off rule, which the monitor's records apply
    "solvers.termination": -1,
    "solvers.monitor": 0,
    "solvers.core": 1,
    "solvers.data": 2,
    "solvers.losses": 2,
    "solvers.models": 3,
    "solvers.evaluate": 3,  # metrics: labels and scores, nothing above the data
    "solvers.calibration": 2,  # Platt's sigmoid: arrays only
    "solvers.problems": 3,
    "solvers.base": 4,
    "solvers.distributed": 4,  # the row operator over Dask partitions, behind the problems
    "solvers.multiclass": 5,
    "solvers.scaling": 5,
    "solvers.approximation": 5,  # the low-rank kernel step of train, beside scaling
    "solvers.auto": 6,
    "solvers.registry": 7,
    "solvers.portfolio": 7,
    "solvers.train": 8,
    "solvers.warmup": 8,
    "solvers.model_selection": 9,
    "solvers.sklearn": 9,  # the scikit-learn estimator over train
    "solvers": 10,
}
FAMILY_LAYER = 6
WEB_OR_SQL = ("fastapi", "starlette", "sqlalchemy", "alembic", "uvicorn", "psycopg", "app")


def _modules() -> list[str]:
    names = ["solvers"]
    names += [m.name for m in pkgutil.walk_packages(solvers.__path__, "solvers.")]
    return sorted(names)


def _layer(module: str) -> tuple[int, str]:
    """(layer, unit): a family's unit is its package, so families cannot import each other."""
    if module == "solvers":
        return LAYERS[module], module
    for prefix in sorted(LAYERS, key=len, reverse=True):
        if prefix != "solvers" and (module == prefix or module.startswith(prefix + ".")):
            return LAYERS[prefix], prefix
    family = ".".join(module.split(".")[:2])
    return FAMILY_LAYER, family


def test_every_module_has_a_layer():
    """A module is in a layer of :data:`LAYERS` or in the package of a registered solver
    family: a new module placed in neither would get the families' layer by default."""
    units = set(LAYERS) | {family.__name__ for family in FAMILIES}
    placed = [module for module in _modules() if _layer(module)[1] in units]
    assert placed == _modules(), sorted(set(_modules()) - set(placed))


def test_the_library_imports_by_absolute_names():
    """The layer check reads absolute imports: a relative one would escape it."""
    relative = []
    for module in _modules():
        path = SOLVERS_DIR.joinpath(*module.split(".")[1:])
        source = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
        relative += [f"{module}:{node.lineno}" for node in ast.walk(ast.parse(source.read_text()))
                     if isinstance(node, ast.ImportFrom) and node.level > 0]
    assert not relative, "\n".join(relative)


def _imports(module: str) -> set[str]:
    path = SOLVERS_DIR.joinpath(*module.split(".")[1:])
    source = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
    tree = ast.parse(source.read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            known = set(_modules())
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                found.add(submodule if submodule in known else node.module)
    return {name for name in found if name == "solvers" or name.startswith("solvers.")}


def _importable(name: str) -> str:
    """The longest prefix of an imported name that is a module of the library."""
    known = set(_modules())
    while name not in known:
        name = name.rsplit(".", 1)[0]
    return name


def test_layers_import_only_downwards():
    problems = []
    for module in _modules():
        layer, unit = _layer(module)
        for imported in _imports(module):
            target = _importable(imported)
            target_layer, target_unit = _layer(target)
            if target_unit == unit:
                continue
            if target_layer >= layer:
                problems.append(f"{module} (layer {layer}) imports {target} "
                                f"(layer {target_layer})")
    assert not problems, "\n".join(problems)


def test_no_import_inside_a_function():
    """Registration by import side effect, or an import hidden in a function to dodge a
    cycle, is how the old registry broke: every import of the library is at module level."""
    problems = []
    for module in _modules():
        path = SOLVERS_DIR.joinpath(*module.split(".")[1:])
        source = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                for inner in ast.walk(node):
                    if isinstance(inner, ast.Import | ast.ImportFrom):
                        names = [a.name for a in inner.names]
                        module_name = getattr(inner, "module", None) or ""
                        if module_name.startswith("solvers") or \
                                any(n.startswith("solvers") for n in names):
                            problems.append(f"{module}:{inner.lineno} in {node.name}()")
    assert not problems, "\n".join(problems)


# Imports every module of argv[2:] first, alone, each in a child forked from this process
# (two at a time), after the third-party imports that every module pays for and none of which
# loads web or SQL code; prints one JSON result per module.  A fork that has imported no module
# of the library is as fresh, for the library, as a new interpreter (third-party modules cannot
# hide a cycle of the library's), and it spares each module the third-party imports: found by
# a first child that imports the whole library, they took 1.3 s of the 1.6 s of
# `import solvers` (SciPy's stats alone 0.65 s), 7 minutes of this test on a loaded machine.
_FRESH_IMPORTS = r"""
import importlib, json, os, sys, traceback
web_or_sql = tuple(sys.argv[1].split(","))

def third_party_of_the_library() -> list:
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        for module in sys.argv[2:]:
            __import__(module)
        names = [m for m in sys.modules if m.split(".")[0] not in web_or_sql + ("solvers",)]
        os.write(write_end, json.dumps(names).encode())
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        text = pipe.read()
    os.waitpid(pid, 0)
    return json.loads(text) if text else []

for name in third_party_of_the_library():
    if name not in sys.modules:
        try:
            importlib.import_module(name)
        except Exception:  # a private module that only its package may import: not needed
            pass
assert not [m for m in sys.modules if m.split(".")[0] in web_or_sql + ("solvers",)]
pending, running, results = sys.argv[2:], {}, []
while pending or running:
    if pending and len(running) < 2:
        module = pending.pop()
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read_end)
            try:
                __import__(module)
                bad = sorted(m for m in sys.modules if m.split(".")[0] in web_or_sql)
                result = [module, 0, ",".join(bad)]
            except BaseException:
                result = [module, 1, traceback.format_exc()[-2000:]]
            os.write(write_end, json.dumps(result).encode())
            os._exit(0)
        os.close(write_end)
        running[pid] = (module, read_end)
    else:
        pid, status = os.wait()
        module, read_end = running.pop(pid)
        with os.fdopen(read_end) as pipe:
            text = pipe.read()
        results.append(json.loads(text) if text else [module, 1, f"died: status {status}"])
print(json.dumps(results))
"""


@pytest.mark.slow
def test_every_module_imports_first_in_a_fresh_interpreter():
    """Each module imported first, alone, in a process that has loaded no module of the
    library: no cycle surfaces whatever the entry point, and none of them pulls in web or
    SQL code."""
    done = subprocess.run([sys.executable, "-c", _FRESH_IMPORTS, ",".join(WEB_OR_SQL),
                           *_modules()], capture_output=True, text=True, timeout=900,
                          env={**os.environ, "NUMBA_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout.strip().splitlines()[-1])
    assert sorted(m for m, _, _ in results) == _modules()
    failures = [f"{m}: {out}" for m, code, out in results if code != 0]
    assert not failures, "\n".join(failures)
    web = [f"{m} imports {out}" for m, code, out in results if code == 0 and out]
    assert not web, "\n".join(web)


REPOSITORY = SOLVERS_DIR.parent


def _package_modules(package: str) -> dict[str, Path]:
    """Every module of a top-level package of the repository: dotted name -> file."""
    modules = {}
    for path in sorted((REPOSITORY / package).rglob("*.py")):
        parts = list(path.relative_to(REPOSITORY).with_suffix("").parts)
        if any(part.startswith(".") for part in parts):
            continue  # a hidden directory (a benchmark's private virtualenv) is not the package
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _import_graph(package: str) -> dict[str, set[str]]:
    """Module -> the modules of the same package it imports, wherever the import statement is
    (a function-level import closes a cycle as surely as one at the top: that is how the
    executor and the Dask executor imported each other)."""
    modules = _package_modules(package)
    graph = {}
    for name, path in modules.items():
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = name.split(".") if path.name == "__init__.py" \
                        else name.split(".")[:-1]
                    parts = parts[:len(parts) - node.level + 1]
                    base = ".".join(parts + ([node.module] if node.module else []))
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules
                           else base for alias in node.names]
            else:
                continue
            for target in targets:
                while target and target not in modules:  # a name inside a module
                    target = target.rpartition(".")[0]
                if target and target != name:
                    found.add(target)
        graph[name] = found
    return graph


def _import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in sorted(graph[module]):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return cycles


def test_the_cycle_finder_finds_a_cycle_through_a_function_level_import():
    graph = {"p.a": {"p.b"}, "p.b": {"p.c"}, "p.c": {"p.a"}, "p.d": {"p.a"}}
    assert _import_cycles(graph) == [["p.a", "p.b", "p.c"]]
    assert _import_cycles({"p.a": {"p.b"}, "p.b": set()}) == []


@pytest.mark.parametrize("package", ["solvers", "app", "bench"])
def test_no_import_cycle(package):
    """No module of the package imports, directly or through others, a module that imports
    it back (the service and the bench included, not only the library's layers)."""
    cycles = _import_cycles(_import_graph(package))
    assert not cycles, "\n".join(" <-> ".join(cycle) for cycle in cycles)


ROUTE_LAYER = ("app.api", "app.main", "app.ui")
"""The service's web layer: the routes and their dependencies, the application factory and
the dashboard.  Only these import the web framework: every module below them (the query
layer, job admission and execution, uploads, predictions, evaluations, security, storage,
the start-up steps ...) raises the domain errors of ``app.errors`` and knows nothing of HTTP
(``app.errors``' own rule)."""
ENTRY_POINTS = ("app.cli", "app.commands")
"""The command line, which starts the application: above every layer of the service."""
WEB_FRAMEWORK = ("fastapi", "starlette", "uvicorn")


def _within(module: str, packages: tuple[str, ...]) -> bool:
    return any(module == package or module.startswith(package + ".") for package in packages)


def _imported_modules(path: Path) -> set[str]:
    """The absolute names a module imports, wherever the import statement is."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def test_below_the_routes_no_module_imports_the_web_framework_or_the_routes():
    """Every module of the service but the web layer and the command line imports neither
    the web framework nor the web layer (nor the command line above it)."""
    checked, problems = set(), []
    for name, path in _package_modules("app").items():
        if _within(name, ROUTE_LAYER + ENTRY_POINTS):
            continue
        checked.add(name)
        offending = {imported for imported in _imported_modules(path)
                     if imported.split(".")[0] in WEB_FRAMEWORK
                     or _within(imported, ROUTE_LAYER + ENTRY_POINTS)}
        problems += [f"{name} imports {imported}" for imported in sorted(offending)
                     if not _within(imported.rpartition(".")[0], tuple(offending))]
    assert not problems, "\n".join(problems)
    # the layers named in app.errors, and the start-up steps, are among those checked
    assert {"app.errors", "app.crud.datasets", "app.jobs.admission", "app.uploads",
            "app.prediction", "app.evaluation", "app.core.security", "app.lifespan",
            "app.metrics", "app.jobs.worker"} <= checked


def test_a_worker_process_imports_no_numba_before_it_sets_its_threads():
    """A spawned worker imports ``app.jobs.worker`` (unpickling its entry point) before it
    sets ``NUMBA_NUM_THREADS``: nothing that module imports may load Numba (the solver
    library, or ``app.schemas``, which builds the solvers' parameter union)."""
    check = ("import sys, app.jobs.worker; "
             "print(sorted(m for m in ('numba', 'solvers') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True,
                          timeout=300, cwd=REPOSITORY)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "[]"


def _linear_options(spec) -> dict:
    """A linear model from every solver (the least-squares family defaults to RBF)."""
    return {"kernel": "linear"} if "kernel" in spec.params_model.model_fields else {}


@pytest.mark.parametrize("spec", solvers.list_solvers(), ids=lambda s: s.name)
def test_logged_objective_is_the_problems_objective_at_the_model(spec):
    """Every registered solver on a real dataset: the last record's objective is what
    ``solvers.problems`` gives at the returned model, and every logged optimality measure is
    finite and non-negative."""
    dataset = load("heart_scale")
    result = solvers.train(dataset, solver=spec.name, **_linear_options(spec))
    assert result.status == "converged", result.message
    assert isinstance(result.model, LinearModel)
    y = np.where(dataset.y == dataset.classes[1], 1.0, -1.0)
    problem = result.params.binary_problem(dataset.X, y, dataset.sample_weight)
    beta = problem.join(result.model.coef_[0], result.model.intercept_[0])
    expected = problem.objective(beta)
    assert result.log, "no records"
    assert result.log[-1].objective == pytest.approx(expected, rel=1e-9)
    assert result.objective == pytest.approx(expected, rel=1e-9)
    for record in result.log:
        assert np.isfinite(record.objective)
        assert np.isfinite(record.optimality) and record.optimality >= 0.0, record
        assert record.extras.get("optimality_measure"), record


_NEW_COMPILATIONS = r"""
import sys, numpy as np, numba.core.registry
import solvers
from solvers.data.dataset import Dataset
solvers.warm_up(parallel=True)

def dispatchers():
    found = {}
    for name, module in list(sys.modules.items()):
        if name.startswith("solvers"):
            for attribute, value in vars(module).items():
                if isinstance(value, numba.core.registry.CPUDispatcher):
                    found[f"{value.__module__}.{value.__name__}"] = value
    return found

before = {name: len(d.signatures) for name, d in dispatchers().items()}
heart = solvers.read_svmlight(sys.argv[1])
dna = solvers.read_svmlight(sys.argv[2])
dna = dna.subset(np.arange(300))
for spec in solvers.list_solvers():
    extra = {"kernel": "linear"} if "kernel" in spec.params_model.model_fields else {}
    for data in (heart, dna):
        solvers.train(data, solver=spec.name, **extra).model.predict(data.X)
    if extra:
        solvers.train(heart, solver=spec.name).model.predict(heart.X)
new = sorted(name for name, d in dispatchers().items() if len(d.signatures) > before.get(name, 0))
print(",".join(new))
"""


@pytest.mark.slow
def test_warm_up_leaves_nothing_to_compile():
    """After a worker's ``solvers.warm_up()`` (which trains nothing), training and predicting
    with every solver -- binary, one-vs-rest, kernels -- compiles no new Numba specialization:
    the shared layers' warm-ups and each family's hook cover what they call."""
    done = subprocess.run([sys.executable, "-c", _NEW_COMPILATIONS, _path("heart_scale"),
                           _path("dna.scale")], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "", f"compiled after the warm-up: {done.stdout.strip()}"


def _path(name: str) -> str:
    from shared_data import data_path

    return str(data_path(name))
