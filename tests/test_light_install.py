"""The bare library (numpy, scipy, pandas only) previews releases; a feature needing an extra says which.

A fresh venv per test run would cost minutes, so the optional packages are hidden from a child
interpreter instead: an import hook refuses them as if they were not installed.
"""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OPTIONAL = ("pyarrow", "opendp", "yaml", "jinja2", "plotly", "streamlit", "threadpoolctl", "numba", "dask",
            "distributed", "psycopg", "dp_accounting", "skfda")

HIDE = f"""
import importlib.abc, sys
class Hide(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in {OPTIONAL!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None
sys.meta_path.insert(0, Hide())
"""


def _run(code: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", HIDE + code, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


def test_the_bare_library_loads_a_csv_and_previews_every_common_release():
    done = _run("""
import numpy as np, fdp_core as fdp
fd = fdp.load_curves('data/example_curves.csv')
rng = np.random.default_rng(0)
print(fdp.plan_mean_release(fd, fdp.MeanSettings(value_range=(-2, 2))).sample(rng, 1).shape)
print(fdp.plan_kde_release(fd, fdp.KdeSettings(box=((-2.0, 2.0),)), feature='mean:0:1').n)
print(fdp.private_pca(fd, fdp.PcaSettings(value_range=(-2, 2), k=1), rng).components.shape)
print(fdp.PrivateMean(bounds=(-2, 2), random_state=0).fit(fd).mean_.shape)
print(sorted(m for m in sys.modules if m.split('.')[0] in {optional!r}))
""".replace("{optional!r}", repr(OPTIONAL)))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.split("\n")
    assert lines[-2] == "[]"  # nothing optional was even attempted successfully


def test_a_feature_that_needs_an_extra_names_it_in_one_line():
    done = _run("""
import fdp_core as fdp
try:
    fdp.commit_mean
except fdp.MissingExtraError as exc:
    print(exc)
""")
    assert done.returncode == 0, done.stderr
    assert "pip install 'fdp[commit]'" in done.stdout and done.stdout.count("\n") == 1
    parquet = _run("""
import fdp_core as fdp
try:
    fdp.load_curves(b'PAR1', name='x.parquet')
except fdp.MissingExtraError as exc:
    print(exc)
""")
    assert "pip install 'fdp[io]'" in parquet.stdout, parquet.stderr


def test_the_command_line_names_the_extra_in_one_line(tmp_path):
    done = _run("import sys\nfrom fdp_core import cli\nsys.exit(cli.main(sys.argv[1:]))", "tradeoff", "--data",
                "data/example_curves.csv", "--param", "epsilon", "--values", "1,2", "--kernel", "matern52", "--rho",
                "0.1", "--tau", "1", "--out", str(tmp_path / "out"))
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "pip install 'fdp[report]'" in done.stderr and not (tmp_path / "out").exists()
