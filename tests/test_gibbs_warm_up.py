"""The compiled Gibbs chain never makes a user wait for numba's first compile (~30 s): without
a loaded or disk-cached chain the Python chain runs and the app compiles in the background."""

import pytest

from fdp_core.mechanisms import gibbs_compiled

pytestmark = pytest.mark.skipif(not gibbs_compiled.available(), reason="numba is not installed")


@pytest.mark.parametrize("loaded,cached,updates,expected", [
    (True, False, 10, True),  # ready in this process: always worth it
    (False, False, 10**7, False),  # neither loaded nor cached: no compile in the user's way
    (False, True, 10**7, True),  # cached: loading takes seconds, worth it for a long chain
    (False, True, 10, False),
])
def test_worth_it_never_compiles_in_the_users_way(monkeypatch, loaded, cached, updates, expected):
    monkeypatch.setattr(gibbs_compiled, "loaded", lambda: loaded)
    monkeypatch.setattr(gibbs_compiled, "cached_on_disk", lambda: cached)
    assert gibbs_compiled.worth_it(updates, 1) is expected


def test_warm_up_starts_one_low_priority_child_per_process(monkeypatch):
    """A child process (numba's compiler holds the GIL: a thread would stall the app's server),
    started once, that fills the disk cache; the page calling it does not import numba."""
    from fdp_core.mechanisms import gibbs_warm_up

    started = []
    monkeypatch.setattr(gibbs_warm_up, "_warm_up", None)
    monkeypatch.setattr(gibbs_warm_up.subprocess, "Popen", lambda argv, **kw: started.append(argv) or "child")
    assert gibbs_warm_up.warm_up_in_background() == "child"
    assert gibbs_warm_up.warm_up_in_background() is None and len(started) == 1
    assert "os.nice(19)" in started[0][-1] and "compile_now()" in started[0][-1]
