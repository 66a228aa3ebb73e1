"""A bare Streamlit page with the same elements as the app's Data page: the floor the app's start and
a new session are paired with (issue 42: within 1.25x of it).

``data_page_inventory(root)`` runs the tree's app once under AppTest (a fresh interpreter) and counts
the Data page's elements by type, separately in the main area and in the sidebar, with the number of
pages in the tree's navigation. ``write_bare_app(into, inventory)`` writes an ``app.py`` with the
same navigation (as many pages) and, in the same places, the same number of each widget (number
inputs, select boxes, radios, check boxes, toggles, text inputs, sliders, select sliders, buttons)
and of each other element (texts, metrics, images: a small SVG, so that bench_app_start.py's "charts
drawn" condition holds; progress bars, page links, an HTML style block, expanders, columns and
containers), with none of the app's computations, plus the tree's ``.streamlit/config.toml`` and, when
the tree has it, its fix of Streamlit's server sockets (fdp_ui/tcp_nodelay.py: TCP_NODELAY, without
which every reused connection waits 40 ms per response): the bare page is served as well as the app.

With ``data=...`` (a CSV file) the bare page also reads that file into numpy, once per server
(st.cache_data), and shows its row count in a metric: the data loading any page that views a data
set needs (numpy's import, the parse). What remains between the app and the bare page is then the
app's own work: its other imports, its checks and its figures.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

INVENTORY_CHILD = r"""
import collections, json, os
from streamlit.testing.v1 import AppTest
at = AppTest.from_file(os.path.join(os.getcwd(), "app.py"), default_timeout=600)
at.run()
counts = {"main": collections.Counter(), "sidebar": collections.Counter()}
def walk(node, where):
    kind = getattr(node, "type", None)
    where = "sidebar" if kind == "sidebar" else where
    counts[where][kind] += 1
    children = getattr(node, "children", None)
    for child in (children.values() if isinstance(children, dict) else []):
        walk(child, where)
walk(at._tree, "main")
print(json.dumps(counts))
"""

SVG = ("<svg xmlns='http://www.w3.org/2000/svg' width='320' height='120'>"
       "<polyline points='0,100 80,40 160,70 240,20 320,60' fill='none' stroke='black'/></svg>")

# One line of Streamlit per element; {i} numbers the element, {k} is a unique widget key.
MAKERS = {
    "number_input": 'st.number_input("number {i}", value=1.0, key="{k}")',
    "selectbox": 'st.selectbox("choice {i}", ["a", "b", "c"], key="{k}")',
    "radio": 'st.radio("radio {i}", ["a", "b"], horizontal=True, key="{k}")',
    "checkbox": 'st.checkbox("check {i}", key="{k}")',
    "toggle": 'st.toggle("toggle {i}", key="{k}")',
    "text_input": 'st.text_input("text {i}", key="{k}")',
    "slider": 'st.slider("slider {i}", 0.0, 1.0, 0.5, key="{k}")',
    "select_slider": 'st.select_slider("epsilon {i}", [0.5, 1.0, 2.0], value=1.0, key="{k}")',
    "button": 'st.button("button {i}", key="{k}")',
    "title": 'st.title("Bare page")',
    "subheader": 'st.subheader("section {i}")',
    "markdown": 'st.markdown("Some **text** {i}.")',
    "caption": 'st.caption("A caption {i}.")',
    "metric": 'st.metric("metric {i}", ROWS)',
    "info": 'st.info("info {i}")',
    "warning": 'st.warning("warning {i}")',
    "progress": 'st.progress(0.5, text="50% used")',
    "image": 'st.image(SVG, width="stretch")',
    "page_link": 'st.page_link(PAGES[{i} % len(PAGES)])',
    "html": 'st.html("<style>.bare-{i} {{ white-space: normal; }}</style>")',
    "expander": 'st.expander("expander {i}")',
}
# Layout blocks: st.columns(2) makes one horizontal block (a flex container) and two columns; the
# blocks left over are plain containers.
LAYOUT = ("flex_container", "column")


def data_page_inventory(root: Path) -> dict:
    """``{"main": {type: count}, "sidebar": {type: count}, "pages": n}`` of the Data page of the app in
    ``root`` (a fresh interpreter, AppTest); only element types the bare page can draw are kept."""
    done = subprocess.run([sys.executable, "-c", INVENTORY_CHILD], cwd=root, capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(root)))
    if done.returncode != 0:
        raise SystemExit(f"inventory failed in {root}: {done.stderr[-600:]}")
    counts = json.loads(done.stdout.strip().splitlines()[-1])
    keep = set(MAKERS) | set(LAYOUT)
    out = {where: {k: v for k, v in counts[where].items() if k in keep} for where in ("main", "sidebar")}
    out["pages"] = max(1, len(list((Path(root) / "pages").glob("*.py"))))
    return out


def _element_lines(counts: dict, where: str) -> list[str]:
    lines = []
    for kind, count in sorted(counts.items()):
        if kind in MAKERS:
            lines += [MAKERS[kind].format(i=i, k=f"{where}_{kind}_{i}") for i in range(count)]
    columns, blocks = counts.get("column", 0), counts.get("flex_container", 0)
    pairs = columns // 2
    for j in range(pairs):
        lines.append(f"st.columns({2 + (columns % 2 if j == pairs - 1 else 0)})")
    lines += ["st.container()"] * max(blocks - pairs, 0)
    return lines


def bare_script(inventory: dict, data: Path | None = None, nodelay: bool = False) -> str:
    lines = ["import streamlit as st", ""]
    if nodelay:
        lines += ["import tcp_nodelay", "", "tcp_nodelay.ensure()"]
    lines += [f"SVG = {SVG!r}", 'st.set_page_config(page_title="bare", layout="wide")']
    if data is not None:
        lines += ["import numpy as np", "", "", "@st.cache_data(show_spinner=False)",
                  "def _rows(path):", '    return np.genfromtxt(path, delimiter=",", names=True, dtype=None, '
                  'encoding="utf-8")', "", "",
                  f"ROWS = len(_rows({str(data)!r}))"]
    else:
        lines.append('ROWS = "0"')
    lines += ["", "", "def data_page():"]
    lines += [f"    {line}" for line in _element_lines(inventory["main"], "main")] or ["    pass"]
    sidebar = _element_lines(inventory["sidebar"], "sidebar")
    if sidebar:
        lines.append("    with st.sidebar:")
        lines += [f"        {line}" for line in sidebar]
    lines += ["", "", "def other_page():", "    st.title('Another page')", "",
              "",
              'PAGES = [st.Page(data_page, title="Data", url_path="data", default=True)] + [',
              f'    st.Page(other_page, title=f"page {{j}}", url_path=f"page{{j}}")',
              f'    for j in range(1, {inventory["pages"]})]',
              "st.navigation(PAGES).run()"]
    return "\n".join(lines) + "\n"


def widget_count(inventory: dict) -> int:
    return sum(v for where in ("main", "sidebar") for k, v in inventory[where].items()
               if k in MAKERS and 'key="{k}"' in MAKERS[k])


def element_count(inventory: dict) -> int:
    return sum(v for where in ("main", "sidebar") for v in inventory[where].values())


def write_bare_app(into: Path, inventory: dict, config_from: Path | None = None, data: Path | None = None) -> Path:
    into.mkdir(parents=True, exist_ok=True)
    nodelay = (config_from / "fdp_ui" / "tcp_nodelay.py") if config_from else None
    nodelay = nodelay if nodelay is not None and nodelay.exists() else None
    if nodelay is not None:
        shutil.copy(nodelay, into / "tcp_nodelay.py")
    (into / "app.py").write_text(bare_script(inventory, data, nodelay is not None))
    config = (config_from / ".streamlit" / "config.toml") if config_from else None
    if config is not None and config.exists():
        (into / ".streamlit").mkdir(exist_ok=True)
        shutil.copy(config, into / ".streamlit" / "config.toml")
    return into


def precompile(root: Path) -> None:
    """Byte-compile the tree's own Python files (app.py, pages/, fdp_ui/, fdp_core/) into __pycache__.

    A deployed server reads its modules' bytecode from __pycache__ (written at install or on the
    first start); under PYTHONDONTWRITEBYTECODE, as on this machine, every server start would
    otherwise compile the app's ~230 modules from source, a cost the bare page's one file does not
    share. Both trees are compiled before they are measured. Not the virtual environment (its
    packages are compiled already), not tests or benchmarks."""
    root = Path(root)
    targets = [str(p) for p in (root / "app.py", root / "tcp_nodelay.py", root / "pages", root / "fdp_ui",
                                root / "fdp_core") if p.exists()]
    if targets:
        subprocess.run([sys.executable, "-m", "compileall", "-q", *targets], cwd=root, check=True,
                       stdout=subprocess.DEVNULL, env={k: v for k, v in os.environ.items()
                                                       if k != "PYTHONDONTWRITEBYTECODE"})
