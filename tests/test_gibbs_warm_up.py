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


def test_warm_up_starts_one_thread_per_process_and_none_once_loaded(monkeypatch):
    started = []

    class FakeThread:
        def __init__(self, target, name, daemon):
            assert daemon  # never keeps a process alive
            started.append(name)

        def start(self):
            pass

    monkeypatch.setattr(gibbs_compiled, "_warm_up", None)
    monkeypatch.setattr(gibbs_compiled, "loaded", lambda: False)
    monkeypatch.setattr(gibbs_compiled.threading, "Thread", FakeThread)
    first = gibbs_compiled.warm_up_in_background()
    assert gibbs_compiled.warm_up_in_background() is first and started == ["fdp-gibbs-compile"]
    monkeypatch.setattr(gibbs_compiled, "loaded", lambda: True)
    assert gibbs_compiled.warm_up_in_background() is None
