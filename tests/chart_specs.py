"""The figures an AppTest run sent to the browser, in page order, whichever way they were drawn:
``st.plotly_chart`` or the slider pages' live charts (fdp_ui/live_chart.py), which carry the same
figure JSON in their data."""

from __future__ import annotations

import json

LIVE_CHART = "fdp_live_chart"


def _walk(node):
    yield node
    for child in getattr(node, "children", {}).values():
        yield from _walk(child)


def chart_specs(at) -> list[tuple[str, str]]:
    """(element id, figure JSON) of every chart of the run, in page order (main area, then sidebar)."""
    found = []
    for node in _walk(at._tree):
        kind = getattr(node, "type", None)
        if kind == "plotly_chart":
            found.append((node.proto.id, node.proto.spec))
        elif kind == "bidi_component" and node.proto.component_name == LIVE_CHART:
            found.append((node.proto.id, json.loads(node.proto.json)["spec"]))
    return found


def chart_figures(at) -> list[dict]:
    """The figures of ``chart_specs``, decoded."""
    return [json.loads(spec) for _, spec in chart_specs(at)]
