"""fdp: differentially private release of functional data (Streamlit entry point).

Run with ``streamlit run app.py``. Every page draws the shared sidebar itself (global privacy
and smoothing settings, fdp_ui.sidebar), so each page also runs on its own under AppTest.
"""

import streamlit as st

st.set_page_config(page_title="fdp: private functional data", page_icon=":material/lock:", layout="wide")

PAGES = [
    st.Page("pages/data.py", title="Data", icon=":material/table_chart:", default=True),
    st.Page("pages/mean.py", title="Mean", icon=":material/show_chart:"),
]

st.navigation(PAGES).run()
