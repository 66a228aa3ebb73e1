"""One release, however many parts (METHODS.md 23; issue 36): the quote computed before any draw from
public settings is what the ledger records, what the CLI prints and what release.json states, for
every kind a `release` command commits; a charged release verifies; a preview charges nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import Phase, given, settings as hsettings, strategies as st

from fdp_core.cli import build_parser, main
from fdp_core.data.loading import load_curves
from fdp_core.publish.kinds import quote
from fdp_core.publish.protocol import CommitRequest
from fdp_core.publish.verify import verify_release
from fdp_core.releases.covariance import CovarianceSettings
from fdp_core.releases.kde import KdeSettings
from fdp_core.releases.mean import MeanSettings
from fdp_core.releases.regression import RegressionSettings
from fdp_core.settings_fields import settings_from_args

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "data" / "example_curves.csv"
COMMON = ["--kernel", "matern52", "--rho", "0.2", "--value-range=-0.5,2"]


def _case(kind: str, eps: float, share: float):
    """(CLI words, registry kind, settings object as the CLI reads them, inputs) of one release at ``eps``."""
    words, registry_kind, cls, inputs = {
        "mean": (["mean", "--mechanism", "gaussian", *COMMON], "mean", MeanSettings, {}),
        "band": (["mean", "--mechanism", "gaussian", *COMMON, "--confidence-band", "0.95", "--band-share",
                  f"{share!r}"], "mean", MeanSettings, {}),
        "kde": (["kde", "--feature", "l2norm", "--box", "0,2"], "density", KdeSettings, {"feature": "l2norm"}),
        "covariance": (["covariance", *COMMON], "covariance", CovarianceSettings, {}),
        "regression": (["regression", "--covariates", "group=A", "--B", "1.5", *COMMON], "regression",
                       RegressionSettings, {}),
    }[kind]
    words = [*words, "--epsilon", f"{eps!r}"]
    args = build_parser().parse_args(["release", *words, "--data", str(EXAMPLE), "--out", "unused"])
    return words, registry_kind, settings_from_args(cls, args), inputs


def _ledger(tmp_path, capsys) -> str:
    url = f"sqlite:///{tmp_path / 'ledger.sqlite3'}"
    assert main(["ledger", "init", "--ledger", url, "--data", str(EXAMPLE), "--epsilon", "1000", "--delta", "0.5"]) == 0
    capsys.readouterr()
    return url


def _entries(url: str, capsys) -> list[dict]:
    capsys.readouterr()
    assert main(["ledger", "show", "--ledger", url, "--data", str(EXAMPLE)]) == 0
    return json.loads(capsys.readouterr().out)["entries"]


@pytest.mark.parametrize("kind", ["mean", "band", "kde", "covariance", "regression"])
@hsettings(max_examples=2, deadline=None, phases=[Phase.explicit, Phase.generate])  # no shrinking: slow CLI runs
@given(eps=st.floats(0.3, 3.0), share=st.floats(0.1, 0.5))
def test_the_quote_printed_is_the_charge_recorded(kind, eps, share, tmp_path_factory, capsys):
    tmp_path = tmp_path_factory.mktemp(kind)
    url = _ledger(tmp_path, capsys)
    words, registry_kind, settings, inputs = _case(kind, eps, share)
    # The quote, from public settings, before anything is drawn.
    quoted = quote(registry_kind, CommitRequest(load_curves(EXAMPLE), settings, inputs=inputs)).entries
    out = tmp_path / "out"
    assert main(["release", *words, "--data", str(EXAMPLE), "--ledger", url, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    recorded = _entries(url, capsys)
    assert [e["status"] for e in recorded] == ["complete"] * len(quoted)
    assert len({e["release_id"] for e in recorded}) == 1  # one release id shared by every part
    for q, r in zip(quoted, recorded):
        assert (q.mechanism, q.epsilon, q.delta) == pytest.approx((r["mechanism"], r["epsilon"], r["delta"]), rel=1e-12)
    total_eps, total_delta = sum(e["epsilon"] for e in recorded), sum(e["delta"] for e in recorded)
    assert f"charged: epsilon {total_eps:.6g}, delta {total_delta:.3g} in total" in printed
    record = json.loads((out / "release.json").read_text())
    assert record["publishable"] is not False
    charged = record.get("charged_total") or record["charged"]
    assert charged["epsilon"] == pytest.approx(total_eps, rel=1e-12)
    if kind == "band":  # the band's block states the same charge (its calibrated split beside it)
        band_total = record["band"]["composed_total"]
        assert band_total["basic"]["epsilon"] == pytest.approx(total_eps, rel=1e-12)
        assert band_total["basic"]["delta"] == pytest.approx(total_delta, rel=1e-12)
        assert band_total["epsilon"] == charged["composed"]["epsilon"] <= band_total["basic"]["epsilon"]
        assert record["band"]["calibrated_total"]["basic"]["epsilon"] == pytest.approx(eps, rel=1e-12)
        assert "confidence band for the smoothed mean (ci_lower/ci_upper)" in printed
    assert f"charged epsilon {total_eps:.6g}, delta {total_delta:.3g}" in (out / "README.txt").read_text()
    if len(recorded) > 1:
        assert f"epsilon = {total_eps:.4g}" in (out / "report.html").read_text()  # the report's headline
    assert verify_release(out / "config.yaml", EXAMPLE, record).verified


def test_a_preview_charges_nothing_and_says_so(tmp_path, capsys):
    url = _ledger(tmp_path, capsys)
    words = _case("band", 1.0, 0.2)[0]
    out = tmp_path / "preview"
    assert main(["release", *words, "--data", str(EXAMPLE), "--ledger", url, "--preview", "--seed", "3",
                 "--out", str(out)]) == 0
    assert "PREVIEW" in capsys.readouterr().out
    record = json.loads((out / "release.json").read_text())
    assert record["publishable"] is False and record["preview"] is True
    assert _entries(url, capsys) == []
    # --seed is for previews only: refused in one line, nothing read, charged or written.
    assert main(["release", *words, "--data", str(EXAMPLE), "--ledger", url, "--seed", "3",
                 "--out", str(tmp_path / "seeded")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --seed applies to --preview only") and err.count("\n") == 1
    assert not (tmp_path / "seeded").exists() and _entries(url, capsys) == []


def test_a_release_without_a_budget_is_refused_and_names_the_way_out(tmp_path, capsys, monkeypatch):
    """A ledger named with --ledger is never ignored: no budget there, one line, nothing written."""
    url = f"sqlite:///{tmp_path / 'named.sqlite3'}"
    out = tmp_path / "out"
    assert main(["release", *_case("mean", 1.0, 0.2)[0], "--data", str(EXAMPLE), "--ledger", url,
                 "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "no budget for these data" in err and "--preview" in err and err.count("\n") == 1
    assert not out.exists()


def test_a_plain_release_without_a_budget_is_a_preview_and_says_so(tmp_path, capsys, monkeypatch):
    """A plain run ($FDP_LEDGER_URL or the default file) with no budget for the data charges nothing and
    writes a preview: "publishable": false, "preview": true, said on screen (METHODS.md 23)."""
    import json

    monkeypatch.setenv("FDP_LEDGER_URL", f"sqlite:///{tmp_path / 'env.sqlite3'}")
    out = tmp_path / "out"
    assert main(["release", *_case("mean", 1.0, 0.2)[0], "--data", str(EXAMPLE), "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert "no budget for these data" in said and "PREVIEW" in said
    record = json.loads((out / "release.json").read_text())
    assert record["publishable"] is False and record["preview"] is True


def test_a_plain_release_on_a_ledger_without_budgets_streams_its_preview(tmp_path, capsys, monkeypatch):
    """A ledger holding no budget at all cannot charge anything: a plain run says PREVIEW at once and never
    reads the file into memory to look a budget up (a streamed preview of a big file keeps flat memory);
    the missing ledger file is not created."""
    import json

    from fdp_core.commands import _common, release_mean

    ledger_file = tmp_path / "never.sqlite3"
    monkeypatch.setenv("FDP_LEDGER_URL", f"sqlite:///{ledger_file}")

    def no_load(args):
        raise AssertionError("the file was read into memory")

    monkeypatch.setattr(_common, "load_data", no_load)
    monkeypatch.setattr(release_mean, "load_data", no_load)
    out = tmp_path / "out"
    assert main(["release", *_case("mean", 1.0, 0.2)[0], "--data", str(EXAMPLE), "--engine", "stream",
                 "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert "no budget for these data" in said and "PREVIEW" in said
    record = json.loads((out / "release.json").read_text())
    assert record["publishable"] is False and record["preview"] is True
    assert not ledger_file.exists()
