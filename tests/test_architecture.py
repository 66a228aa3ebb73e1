"""The code's shape, checked from its source (issues 14 and 27; docs/ARCHITECTURE.md).

* No import cycle among the project's modules, counting imports inside functions too; an
  import of a project module inside a function (fdp_core, fdp_ui) says why with a
  ``# lazy: <why>`` comment (an optional or heavy dependency loaded late for start-up speed).
* Imports point downwards: pages -> fdp_ui -> fdp_core; fdp_core never imports Streamlit;
  the noise mechanisms and the registry never import a release module, the ledger or the UI;
  inside fdp_core every module imports only from its own layer or a lower one (``LAYERS``).
* No module imports another module's private name (``from x import _y`` or ``x._y``).
* No branching on a mechanism's name outside the registry: code asks the registry entry.
* Every page stays under ``PAGE_LINES`` lines (library logic lives in fdp_core, widgets in fdp_ui).
* Every kind of release that commits (fdp_core/publish/kinds.py) goes through the commit protocol:
  its commit hook runs its :class:`fdp_core.publish.protocol.Steps` with ``run_steps``.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("fdp_core", "fdp_ui")


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _sources() -> dict[str, Path]:
    out = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            out[_module_name(path)] = path
    for path in [ROOT / "app.py", *(ROOT / "pages").glob("*.py")]:
        out[_module_name(path)] = path
    return out


SOURCES = _sources()


def _resolve(module: str, node: ast.ImportFrom, is_package: bool) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _is_project(name: str) -> bool:
    return name.split(".")[0] in ("fdp_core", "fdp_ui", "pages")


def _imports(module: str, text: str, is_package: bool = False):
    """Every import statement of ``module``: (node, modules it names, inside a function?, marked lazy?)."""
    tree = ast.parse(text)
    lines = text.splitlines()
    inside = set()
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            inside.update(id(node) for node in ast.walk(fn) if isinstance(node, (ast.Import, ast.ImportFrom)))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            named = {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(module, node, is_package)
            # "from package import submodule" imports the submodule too.
            named = {target} | {f"{target}.{alias.name}" for alias in node.names
                                if f"{target}.{alias.name}" in SOURCES}
        else:
            continue
        marked = any("# lazy:" in lines[number - 1] for number in {node.lineno, node.end_lineno})
        out.append((node, {name for name in named if name in SOURCES}, id(node) in inside, marked))
    return out


IMPORTS = {module: _imports(module, path.read_text(), path.name == "__init__.py") for module, path in SOURCES.items()}
# Every project module each module imports, at its top level or inside a function.
GRAPH = {module: set().union(*(named for _, named, _, _ in found)) if found else set()
         for module, found in IMPORTS.items()}


def _cycle() -> list[str] | None:
    state, stack = {}, []

    def walk(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(GRAPH[node]):
            if nxt.startswith(node + ".") or node.startswith(nxt + "."):
                continue  # a package and its own submodules: Python resolves these without a cycle
            if state.get(nxt) == "open":
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = walk(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = "done"
        return None

    for module in sorted(GRAPH):
        if module not in state:
            found = walk(module)
            if found:
                return found
    return None


def test_no_import_cycle():
    cycle = _cycle()
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def _all_imports(module: str) -> set[str]:
    """Every module named anywhere in ``module`` (function-level imports included)."""
    out = set()
    for node, named, _, _ in IMPORTS[module]:
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        else:
            out.add(_resolve(module, node, SOURCES[module].name == "__init__.py"))
        out.update(named)
    return out


# (modules matching this prefix, may not import modules matching these prefixes)
FORBIDDEN = [
    ("fdp_core", ("streamlit", "fdp_ui", "pages", "plotly.express")),
    ("fdp_ui", ("pages",)),
    ("fdp_core.mechanisms", ("fdp_core.budget.accounting", "fdp_core.budget.ledger_store", "fdp_core.publish.commit", "fdp_core.releases.mean",
                             "fdp_core.releases.kde", "fdp_core.releases.pca", "fdp_core.releases.covariance", "fdp_core.releases.regression",
                             "fdp_core.registry", "fdp_core.publish.export", "fdp_core.publish.bundle")),
    ("fdp_core.registry", ("fdp_core.releases.mean", "fdp_core.releases.kde", "fdp_core.releases.pca", "fdp_core.releases.covariance",
                           "fdp_core.releases.regression", "fdp_core.publish.commit", "fdp_core.publish.export", "fdp_core.budget.ledger_store")),
]


@pytest.mark.parametrize("prefix,forbidden", FORBIDDEN, ids=[p for p, _ in FORBIDDEN])
def test_imports_point_downwards(prefix, forbidden):
    bad = sorted(f"{module} imports {target}" for module in SOURCES
                 if module == prefix or module.startswith(prefix + ".")
                 for target in _all_imports(module)
                 if any(target == f or target.startswith(f + ".") for f in forbidden))
    assert not bad, "\n".join(bad)


# A comparison of a mechanism-ish variable (or attribute) with a string literal: the
# branching the registry replaces. Noise *families* are asked through NoiseFamily objects.
NAME_BRANCH = re.compile(r"""\b(mechanism|mech|sampler|sampler_name|noise|family)\b\s*(==|!=|\bin\b|\bnot in\b)\s*[("']""")


def test_no_branching_on_mechanism_names_outside_the_registry():
    hits = []
    for module, path in SOURCES.items():
        if module.startswith("fdp_core.registry"):
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]
            if NAME_BRANCH.search(code):
                hits.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not hits, "branch on a mechanism name (ask the registry entry instead):\n" + "\n".join(hits)


def test_the_checks_would_catch_a_planted_violation(tmp_path):
    """Controls: the branch pattern and the cycle finder see what they are meant to see."""
    assert NAME_BRANCH.search('if settings.mechanism == "gaussian":')
    assert NAME_BRANCH.search("x = 1 if sampler in ('gibbs', 'exact') else 2")
    assert not NAME_BRANCH.search('if entry.uses_delta:')
    saved = dict(GRAPH)
    try:
        GRAPH["fdp_core.errors"] = GRAPH["fdp_core.errors"] | {"fdp_core.releases.mean"}
        assert _cycle() is not None
    finally:
        GRAPH.clear()
        GRAPH.update(saved)


# --------------------------------------------------------------------------- imports inside functions

def _unmarked_function_imports(module: str, imports) -> list[str]:
    """Imports of project modules inside functions without a ``# lazy: <why>`` comment."""
    return [f"{module}:{node.lineno}: {ast.unparse(node)}" for node, named, in_function, marked in imports
            if in_function and named and not marked]


def test_imports_inside_functions_say_why():
    """Library code imports project modules at the top; inside a function only to load an optional
    or heavy dependency late (start-up speed), and then with ``# lazy: <why>``."""
    bad = [hit for module, found in sorted(IMPORTS.items()) if module.startswith(("fdp_core", "fdp_ui"))
           for hit in _unmarked_function_imports(module, found)]
    assert not bad, "import inside a function without '# lazy: <why>':\n" + "\n".join(bad)


# --------------------------------------------------------------------------- private names

def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _private_crossings(module: str, text: str, is_package: bool = False) -> list[str]:
    """``from x import _y`` and ``x._y`` where x is another project module."""
    tree = ast.parse(text)
    modules = {}  # local name -> project module it is bound to
    hits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _is_project(alias.name):
                    modules[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else \
                        alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(module, node, is_package)
            if not _is_project(target):
                continue
            for alias in node.names:
                if _is_project(f"{target}.{alias.name}") and f"{target}.{alias.name}" in SOURCES:
                    modules[alias.asname or alias.name] = f"{target}.{alias.name}"
                if _private(alias.name) and target != module:
                    hits.append(f"{module}:{node.lineno}: from {target} import {alias.name}")
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            chain, value = [], node.value
            while isinstance(value, ast.Attribute):
                chain.append(value.attr)
                value = value.value
            if isinstance(value, ast.Name) and value.id in modules:
                owner = ".".join([modules[value.id], *reversed(chain)])
                if owner in SOURCES and owner != module:
                    hits.append(f"{module}:{node.lineno}: {owner}.{node.attr}")
    return hits


def test_no_module_uses_another_modules_private_names():
    """A helper two modules share is a public, documented name of the module it belongs to."""
    bad = [hit for module, path in sorted(SOURCES.items())
           for hit in _private_crossings(module, path.read_text(), path.name == "__init__.py")]
    assert not bad, "private name used across modules:\n" + "\n".join(bad)


# --------------------------------------------------------------------------- layers of fdp_core

# fdp_core's layers, lowest first: a module imports only from its own layer or a lower one
# (docs/ARCHITECTURE.md, "Layers"). A module belongs to the entry with its longest matching
# prefix. A few modules sit below their concept package because lower layers use them: the
# estimators and the public box (mechanisms and bounds use them) and the release record writer
# (every release kind writes through it); the plan across statistics sits above publication
# (it prices commits).
LAYERS = [
    ("foundations", ("fdp_core.errors", "fdp_core.limits", "fdp_core.params", "fdp_core.threads", "fdp_core.kernels",
                     "fdp_core.long_grid")),
    ("estimators, boxes, bounds", ("fdp_core.releases.estimators", "fdp_core.releases.box", "fdp_core.sensitivity")),
    ("data in", ("fdp_core.data",)),
    ("noise mechanisms", ("fdp_core.mechanisms",)),
    ("settings metadata", ("fdp_core.settings_fields",)),
    ("budget", ("fdp_core.budget",)),
    ("registry", ("fdp_core.registry",)),
    ("release records", ("fdp_core.publish.release",)),
    ("releases", ("fdp_core.releases",)),
    ("engines", ("fdp_core.engines",)),
    ("exploration", ("fdp_core.explore",)),
    ("publication", ("fdp_core.publish",)),
    ("plans across statistics", ("fdp_core.explore.plan",)),
    ("plan commits", ("fdp_core.publish.plan_commit", "fdp_core.publish.plan_report")),
    ("command line", ("fdp_core.commands", "fdp_core.cli", "fdp_core._entry", "fdp_core.__main__", "fdp_core")),
    ("Python estimators", ("fdp_core.estimators",)),
]


def _layer(module: str) -> int | None:
    """Index in LAYERS of ``module`` (longest matching prefix; the bare package matches only itself)."""
    best, length = None, -1
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            matches = module == prefix or (prefix != "fdp_core" and module.startswith(prefix + "."))
            if matches and len(prefix) > length:
                best, length = index, len(prefix)
    return best


def _upward_imports(graph) -> list[str]:
    bad = []
    for module in sorted(graph):
        if not module.startswith("fdp_core"):
            continue
        for target in sorted(graph[module]):
            if not target.startswith("fdp_core") or module.startswith(target + "."):
                continue  # a package's own __init__ is imported with any of its modules
            if _layer(target) > _layer(module):
                bad.append(f"{module} ({LAYERS[_layer(module)][0]}) imports {target} ({LAYERS[_layer(target)][0]})")
    return bad


def test_every_fdp_core_module_has_a_layer():
    missing = sorted(module for module in SOURCES if module.startswith("fdp_core") and _layer(module) is None)
    assert not missing, "add these modules to LAYERS (and docs/ARCHITECTURE.md):\n" + "\n".join(missing)


def test_fdp_core_imports_only_downwards_through_its_layers():
    bad = _upward_imports(GRAPH)
    assert not bad, "upward import (see LAYERS):\n" + "\n".join(bad)


# --------------------------------------------------------------------------- thin pages

PAGE_LINES = 250
PAGES = sorted((ROOT / "pages").glob("*.py"))


def _too_long(path: Path) -> bool:
    return len(path.read_text().splitlines()) >= PAGE_LINES


@pytest.mark.parametrize("page", PAGES, ids=[path.stem for path in PAGES])
def test_pages_stay_thin(page):
    lines = len(page.read_text().splitlines())
    assert not _too_long(page), f"pages/{page.name} has {lines} lines; keep pages under {PAGE_LINES}"


# --------------------------------------------------------------------------- the checks can fail

def test_the_new_checks_would_catch_planted_violations(tmp_path):
    """Controls for the checks above: each sees the violation it is meant to see."""
    # A cycle through an import inside a function.
    late = "def late():\n    from fdp_core.releases.mean import MeanSettings  # lazy: planted\n"
    planted = _imports("fdp_core.errors", late)
    saved = dict(GRAPH)
    try:
        GRAPH["fdp_core.errors"] = GRAPH["fdp_core.errors"] | set().union(*(named for _, named, _, _ in planted))
        assert _cycle() is not None
        assert any("fdp_core.errors" in line for line in _upward_imports(GRAPH))
    finally:
        GRAPH.clear()
        GRAPH.update(saved)
    # An unmarked import inside a function; marked ones and top-level ones pass.
    unmarked = "import numpy\nfrom .limits import MAX_ABS_VALUE\n\ndef f():\n    from .kernels import eigenbasis\n"
    assert len(_unmarked_function_imports("fdp_core.errors", _imports("fdp_core.errors", unmarked))) == 1
    marked = unmarked.replace("eigenbasis\n", "eigenbasis  # lazy: planted\n")
    assert not _unmarked_function_imports("fdp_core.errors", _imports("fdp_core.errors", marked))
    # Private names across modules, imported or reached as an attribute; one's own and self's pass.
    crossing = ("from fdp_core.publish.commit import _draw\n"
                "from fdp_core.publish import commit\n"
                "import fdp_core.publish.replay as rp\n"
                "import fdp_core.publish.bundle\n"
                "def f(self):\n"
                "    self._x, commit._versions(), rp._one_line('a'), fdp_core.publish.bundle._y\n")
    hits = _private_crossings("fdp_core.explore.plan", crossing)
    assert len(hits) == 4, hits
    assert not _private_crossings("fdp_core.publish.commit", "from fdp_core.publish.commit import _draw\n")
    # A page over the limit.
    page = tmp_path / "long.py"
    page.write_text("x = 1\n" * PAGE_LINES)
    assert _too_long(page)
    page.write_text("x = 1\n" * (PAGE_LINES - 1))
    assert not _too_long(page)


# --------------------------------------------------------------------------- kinds commit through the protocol

def _off_protocol(release_kinds) -> list[str]:
    """The committing kinds whose commit hook is not the protocol's run of its Steps.

    A hook built by ``kinds.steps_hook(steps)`` shares that closure's code (which calls
    ``protocol.run_steps``) and carries its Steps; any other callable commits by hand.
    """
    from fdp_core.publish import kinds, protocol

    protocol_hook = kinds.steps_hook(protocol.Steps(quote=None, build=None)).__code__
    return [name for name, kind in release_kinds.items() if kind.commit is not None
            and (getattr(kind.commit, "__code__", None) is not protocol_hook
                 or not isinstance(getattr(kind.commit, "steps", None), protocol.Steps))]


def test_every_committing_kind_commits_through_the_protocol_steps():
    from fdp_core.publish.kinds import RELEASE_KINDS

    assert [k for k in RELEASE_KINDS.values() if k.commits], "no committing kind found: the check sees nothing"
    assert not _off_protocol(RELEASE_KINDS)


def test_the_kinds_check_would_catch_a_hook_committing_by_hand():
    import dataclasses

    from fdp_core.publish import kinds
    from fdp_core.publish.band_commit import BAND_STEPS, commit_mean_with_band

    mean = kinds.RELEASE_KINDS["mean"]

    def by_hand(account, request, quote):  # the old band hook: re-planned, outside run_steps
        return commit_mean_with_band(account, request.data, request.settings)

    by_hand.steps = BAND_STEPS  # claiming Steps is not enough: the hook must be the protocol's
    planted = {"mean": dataclasses.replace(mean, commit=by_hand),
               "band": dataclasses.replace(mean, name="band", commit=kinds.steps_hook(BAND_STEPS)),
               "preview": dataclasses.replace(mean, name="preview", commit=None)}
    assert _off_protocol(planted) == ["mean"]
