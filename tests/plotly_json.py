"""Reading the plotly figures a page sent to the browser (shared by the AppTest files)."""

import base64

import numpy as np


def plotly_array(value) -> np.ndarray:
    """A plotly JSON array as floats: a list (None = gap, read as nan), or a base64 typed array
    {"dtype", "bdata"} (how plotly 6+ encodes numpy arrays)."""
    if isinstance(value, dict):
        return np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"])).astype(float)
    return np.array([np.nan if v is None else v for v in value], dtype=float)
