"""Publication: commit (reserve, draw, write, complete), bundles, reports, replay and re-run scripts."""
