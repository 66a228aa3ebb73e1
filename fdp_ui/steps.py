"""The guided flow: Data -> Unit & bounds -> Explore -> Release, shown above every page.

Each step knows what is still missing before the next one makes sense (a refused upload,
no public bound declared, no person column while an id repeats, nothing explored yet).
The bar links every step; a "next" link says why it is disabled. The free pages stay
reachable from the navigation: the bar guides, it never blocks.

The checks read only the session state (what the user declared), never the data values.
"""

from __future__ import annotations

from dataclasses import dataclass
import streamlit as st

from . import commit_checks, intake_panel, ledger, navigation, sidebar, state

VISITED_KEY = "steps_visited"
CONFIRMED_KEY = "steps_bounds_public"  # the checkbox on the Data page
CONFIRMED_TAU_KEY = "steps_bounds_tau"  # the tau value the confirmation was given for
EXPLORE_PAGES = ("pages/mean.py", "pages/density.py", "pages/components.py", "pages/covariance.py",
                 "pages/tradeoffs.py")


@dataclass(frozen=True)
class Step:
    number: int
    title: str
    page: str  # the page where the step is done
    done: bool
    missing: tuple[str, ...]  # what the user still has to do (plain words)
    note: str = ""  # a non-blocking remark


def _visited() -> set:
    return st.session_state.setdefault(VISITED_KEY, set())


def record_visit(page_path: str) -> None:
    _visited().add(page_path)


def tau_from_range() -> bool:
    """tau = (hi - lo)/2 of the declared public range is in force (public by construction)."""
    return state.declared_range() is not None and bool(
        st.session_state.get("g_tau_from_range", sidebar.setting_default("g_tau_from_range")))


def tau_confirmed() -> bool:
    """Declared for the tau now in force (the checkbox's own state is dropped on other pages)."""
    ss = st.session_state
    tau = ss.get("g_tau", sidebar.setting_default("g_tau"))  # before the sidebar's first run: its default
    return ss.get(CONFIRMED_TAU_KEY) is not None and ss.get(CONFIRMED_TAU_KEY) == tau


def compute() -> list[Step]:
    ss = st.session_state
    ds = state.current()
    # 1. Data
    missing1, note1 = [], ""
    if "data_error" in ss and intake_panel.loadable_pending():
        missing1.append(intake_panel.instruction(intake_panel.loadable_pending()).rstrip(".") + " (Data page)")
    elif "data_error" in ss:
        missing1.append(f"the last upload was refused ({ss['data_error']}); fix the file or choose another "
                        f"source (still loaded: {ds.label})")
    if ds.kind == "example":
        note1 = "the built-in example is loaded: fine for a classroom; upload your own file for a real release"
    step1 = Step(1, "Data", "pages/data.py", not missing1, tuple(missing1), note1)
    # 2. Unit & bounds (the Data page's person column and public value range, the sidebar's tau)
    missing2 = []
    missing2.extend(commit_checks.unit_checks(ds)[0])  # person column, or the declared curve unit; enough persons
    if state.declared_range() is None:
        missing2.append("no public value range declared yet (Data page, 'Public value range')")
    if ss.get("g_tau_from_data"):
        missing2.append("tau is read off the data: type a public bound instead (sidebar)")
    elif not tau_from_range() and not tau_confirmed():
        missing2.append("declare tau public: confirm that the tau typed in the sidebar was chosen without looking "
                        "at the data (Data page, 'Declare tau')")
    step2 = Step(2, "Unit & bounds", "pages/data.py", not missing2, tuple(missing2))
    # 3. Explore
    explored = sorted(p for p in _visited() if p in EXPLORE_PAGES)
    missing3 = () if explored else ("look at one analysis (Mean, Density, Principal components) and its accuracy "
                                    "before spending budget",)
    step3 = Step(3, "Explore", "pages/mean.py", bool(explored), missing3)
    # 4. Release
    n_committed = len(ledger.releases())
    step4 = Step(4, "Release", "pages/release.py", n_committed > 0,
                 () if n_committed else ("commit a release (Release & audit page): fresh noise, charged to the "
                                         "budget, then download the bundle",))
    return [step1, step2, step3, step4]


def current_step(page_path: str, steps: list[Step]) -> int:
    """The step a page belongs to (the Data page hosts steps 1 and 2)."""
    if page_path == "pages/data.py":
        return 1 if not steps[0].done else 2
    if page_path == "pages/release.py":
        return 4
    return 3


def blocking_reason(steps: list[Step], number: int) -> str | None:
    """Why step ``number`` does not make sense yet: the first earlier step with something missing."""
    for step in steps[:number - 1]:
        if not step.done:
            return f"Step {step.number} ({step.title}) first: {step.missing[0]}."
    return None


def _mark(step: Step, current: int) -> str:
    symbol = "✓" if step.done else ("→" if step.number == current else "·")
    return f"{symbol} {step.number}. {step.title}"


def render(page_path: str) -> None:
    """The step bar, the current step's missing items, and a 'next' link (disabled with its reason)."""
    record_visit(page_path)
    steps = compute()
    current = current_step(page_path, steps)
    bar = st.container(key="step_bar")
    columns = bar.columns(len(steps) + 1)
    for column, step in zip(columns, steps):
        help_text = ("done" if step.done else "missing: " + "; ".join(step.missing)) + (
            f". Note: {step.note}" if step.note else "")
        column.page_link(step.page, label=_mark(step, current), help=help_text,
                         disabled=not (navigation.ROOT / step.page).exists())
    here = steps[current - 1]
    nxt = steps[current] if current < len(steps) else None
    with columns[-1]:
        if nxt is not None:
            reason = None if here.done else f"Step {here.number} ({here.title}) first: {here.missing[0]}."
            reason = reason or blocking_reason(steps, nxt.number)
            same_page = nxt.page == page_path
            st.page_link(nxt.page, label=f"Next: {nxt.title}", disabled=bool(reason) or same_page,
                         help=reason or ("on this page, below" if same_page else f"go to step {nxt.number}"))
    if not here.done:
        bar.caption(f"**Step {here.number}, {here.title}: still missing** — " + "; ".join(here.missing) + ".")
    elif nxt is not None:
        reason = blocking_reason(steps, nxt.number)
        bar.caption(f"Step {here.number} ({here.title}) is done."
                    + (f" Next: {nxt.title}." if not reason else f" Before {nxt.title}: {reason}"))
    else:
        bar.caption("All four steps done: the release is committed. The free pages stay open for exploration.")
    if here.note:
        bar.caption(f"Note: {here.note}.")


def _confirm(tau: float) -> None:
    st.session_state[CONFIRMED_TAU_KEY] = tau if st.session_state.get(CONFIRMED_KEY) else None


def render_bounds_section(tau: float, tau_from_data: bool) -> None:
    """Step 2 on the Data page: a tau typed in the sidebar is declared public explicitly (a tau
    from the declared value range needs no declaration: it is public by construction)."""
    if tau_from_data or tau_from_range():
        return
    st.subheader("Declare tau (step 2)")
    ss = st.session_state
    ss[CONFIRMED_KEY] = ss.get(CONFIRMED_TAU_KEY) == tau  # a changed tau must be declared again
    st.checkbox(f"tau = {tau:.4g} (sidebar) is public: chosen from domain knowledge, not from these data",
                key=CONFIRMED_KEY, on_change=_confirm, args=(tau,),
                help="A bound read off the data leaks information about the people in it. Declaring the bounds "
                     "public is the data custodian's responsibility; the step bar waits for it. Declaring a public "
                     "value range (above) sets tau from it instead.")
