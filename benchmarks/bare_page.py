"""A bare Streamlit page with the same widgets as the app's Data page: the floor the app's start and
a new session are paired with (issue 42: within 1.25x of it).

``data_page_inventory(root)`` runs the tree's app once under AppTest (a fresh interpreter) and counts
the Data page's elements by type, sidebar included; ``write_bare_app(into, inventory)`` writes an
``app.py`` that draws the same number of each widget (number inputs, select boxes, radios, check
boxes, toggles, text inputs, sliders, select sliders, buttons) and of each text, metric, image
(a small SVG, so that bench_app_start.py's "charts drawn" condition holds), progress and page link,
with none of the app's computations, plus the tree's ``.streamlit/config.toml``. What remains
between the two is the app's own work: its imports, its data and its figures.
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
counts = collections.Counter()
def walk(node):
    counts[getattr(node, "type", None)] += 1
    children = getattr(node, "children", None)
    for child in (children.values() if isinstance(children, dict) else []):
        walk(child)
walk(at._tree)
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
    "metric": 'st.metric("metric {i}", "{i}")',
    "info": 'st.info("info {i}")',
    "warning": 'st.warning("warning {i}")',
    "progress": 'st.progress(0.5, text="50% used")',
    "image": 'st.image(SVG, width="stretch")',
}


def data_page_inventory(root: Path) -> dict[str, int]:
    """Element counts of the Data page of the app in ``root`` (a fresh interpreter, AppTest)."""
    done = subprocess.run([sys.executable, "-c", INVENTORY_CHILD], cwd=root, capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(root)))
    if done.returncode != 0:
        raise SystemExit(f"inventory failed in {root}: {done.stderr[-600:]}")
    return {k: v for k, v in json.loads(done.stdout.strip().splitlines()[-1]).items() if k in MAKERS}


def bare_script(inventory: dict[str, int]) -> str:
    lines = ["import streamlit as st", "", f"SVG = {SVG!r}", 'st.set_page_config(page_title="bare", layout="wide")']
    for kind, count in sorted(inventory.items()):
        for i in range(count):
            lines.append(MAKERS[kind].format(i=i, k=f"{kind}_{i}"))
    return "\n".join(lines) + "\n"


def widget_count(inventory: dict[str, int]) -> int:
    return sum(v for k, v in inventory.items() if 'key="{k}"' in MAKERS[k])


def write_bare_app(into: Path, inventory: dict[str, int], config_from: Path | None = None) -> Path:
    into.mkdir(parents=True, exist_ok=True)
    (into / "app.py").write_text(bare_script(inventory))
    config = (config_from / ".streamlit" / "config.toml") if config_from else None
    if config is not None and config.exists():
        (into / ".streamlit").mkdir(exist_ok=True)
        shutil.copy(config, into / ".streamlit" / "config.toml")
    return into
