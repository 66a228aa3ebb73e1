"""The code's shape, checked from its source (issue 14; docs/ARCHITECTURE.md).

* No import cycle among the modules' top-level imports (imports inside functions are the
  deliberate way to reach an optional or heavier module late, and cannot form a cycle at
  import time).
* Imports point downwards: pages -> fdp_ui -> fdp_core; fdp_core never imports Streamlit;
  the noise mechanisms and the registry never import a release module, the ledger or the UI.
* No branching on a mechanism's name outside the registry: code asks the registry entry.
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


def _top_level_imports(module: str) -> set[str]:
    """Modules imported when ``module`` is imported (top level and class bodies, not functions)."""
    path = SOURCES[module]
    tree = ast.parse(path.read_text())
    found = set()

    def visit(body):
        for node in body:
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                target = _resolve(module, node, path.name == "__init__.py")
                found.add(target)
                # "from package import submodule" imports the submodule too.
                found.update(f"{target}.{alias.name}" for alias in node.names
                             if f"{target}.{alias.name}" in SOURCES)
            elif isinstance(node, (ast.If, ast.Try, ast.With)):
                visit(node.body)
                for extra in getattr(node, "orelse", []), getattr(node, "finalbody", []):
                    visit(extra)
                for handler in getattr(node, "handlers", []):
                    visit(handler.body)
            elif isinstance(node, ast.ClassDef):
                visit(node.body)

    visit(tree.body)
    return {name for name in found if name in SOURCES}


GRAPH = {module: _top_level_imports(module) for module in SOURCES}


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
    path = SOURCES[module]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            out.add(_resolve(module, node, path.name == "__init__.py"))
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
