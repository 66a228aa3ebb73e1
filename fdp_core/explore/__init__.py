"""Exploration and planning from public quantities: accuracy, trade-offs, tuning, the private selection, risk, audits, plans."""
