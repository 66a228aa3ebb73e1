"""README.txt of a bundle: what each file is, which are publishable, how to verify.

Written from public facts only (the release's id, label, kind and mechanism), so it is as
publishable as the rest of the zip.
"""

from __future__ import annotations

README_NAME = "README.txt"

# name -> (publishable?, what it is)
FILES = {
    "release.csv": (True, "the released output (noised, then post-processed as release.json states under "
                          "'post_processing'): the curve, density, covariance surface or components"),
    "coefficients.csv": (True, "the exact discrete sampler's output on its grid (the noised coefficients the "
                               "release is computed from)"),
    "release.json": (True, "the guarantee: mechanism, public settings, sensitivity, noise scale, charge, "
                           "post-processing, library versions"),
    "config.yaml": (True, "the public settings, to verify or replay the release"),
    "ledger.json": (True, "the privacy ledger at export: every release charged to this budget"),
    "report.html": (True, "a readable report of all of the above (open in a browser, works offline)"),
    "release.py": (True, "verifies the release against config.yaml and the data (draws nothing)"),
    "release.ipynb": (True, "the same check as a notebook"),
    README_NAME: (True, "this file"),
}


def verdict_line(verdict: dict | None) -> str:
    """The release's accuracy verdict as its record states it (issue 38), in one line; "" without one."""
    if not verdict:
        return ""
    if verdict.get("level") is None:
        return f"VERDICT: none published ({verdict.get('basis', 'no verdict')})\n"
    return (f"VERDICT: {verdict['colour'].upper()} ({verdict['word']}): {verdict['share']:.0%} of the public scale; "
            f"{verdict['basis']}\n")


def charge_text(entries) -> str:
    """The one quote (METHODS.md 23): every part as the ledger charged it and the total."""
    entries = list(entries)
    total = (f"charged epsilon {sum(e.epsilon for e in entries):.6g}, delta {sum(e.delta for e in entries):.3g} "
             "to the ledger")
    if len(entries) == 1:
        return total
    return total + f" in {len(entries)} parts: " + "; ".join(
        f"{e.mechanism} epsilon {e.epsilon:.6g}, delta {e.delta:.3g}" for e in entries)


def readme_text(release_id: str, label: str, kind: str, mechanism: str, entries=(),
                verdict: dict | None = None) -> str:
    width = max(len(name) for name in FILES)
    rows = "\n".join(f"  {name:<{width}}  {'publishable' if ok else 'NOT publishable'}: {what}"
                     for name, (ok, what) in FILES.items())
    charge = f"\n{charge_text(entries)}" if entries else ""
    return f"""fdp release {release_id}: {label}
{kind} release, mechanism {mechanism}{charge}
{verdict_line(verdict)}
FILES
{rows}

Every file in this zip holds only public inputs (settings, declared n, range, grid) and the
noised output, so the whole zip may be published. NOT in this zip and NEVER to be published:
analyst_view.json (downloaded separately, marked "publishable": false): counts and errors
computed from the data without noise (curves clipped, bias against the raw mean, the release
before post-processing).

HOW TO VERIFY
1. Make fdp_core importable: from the fdp project folder run `pip install -e .`
   (or prefix the commands below with PYTHONPATH=/path/to/the/fdp/project).
2. Run, next to these files:  python release.py DATA_FILE
   It re-derives the sensitivity, the noise scale and the privacy charge from config.yaml and
   the data, compares them with release.json and prints "verified" (or the mismatches).
   It draws no noise, spends no budget and writes nothing. release.ipynb does the same.
3. A NEW release with the same settings (fresh noise, a new charge) is made only on request:
   python release.py DATA_FILE --new-release --ledger LEDGER_URL
   It is charged to that persistent ledger (default: $FDP_LEDGER_URL, else your ledger file).
"""
