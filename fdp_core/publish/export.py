"""The export API in one namespace: commit, bundle, report, replay and audit.

Each concept lives in its own module; this module only gathers their public names so that
callers write ``export.commit_mean(...)``, ``export.export_zip(...)``, ``export.replay(...)``:

- :mod:`fdp_core.publish.commit`: plan -> charge the ledger -> exact discrete noise -> record;
- :mod:`fdp_core.publish.bundle`: the publishable files of a committed release (zip or folder);
- :mod:`fdp_core.publish.report`: ledger and risk tables, figures, the self-contained HTML report;
- :mod:`fdp_core.publish.replay`: replayable configs (``config.yaml``) and their replay on new data;
- :mod:`fdp_core.explore.audit`: the black-box privacy audit of a configured mean mechanism.
"""

from ..explore.audit import MechanismAudit, audit_mean_mechanism
from .bundle import analyst_view_json, bundle_files, config_yaml, export_folder, export_zip
from .commit import (BUNDLE_FILES, COMMIT_RANDOMNESS, CONFIG_SCHEMA, NO_PERSISTENT_LEDGER, NONPRIVATE_VIEWS,
                     NOT_DP_WARNING, NOTHING_DECLARED, ON_GRID_NOTE, PCA_ACCURACY, PCA_HARDENING, PCA_NOT_EXPORTED,
                     PCA_ON_GRID, PRE_REGISTERED, RANDOMNESS_PCA, RELEASE_SCHEMA, SUMMARY_COMMIT_KINDS, CommittedRelease,
                     PendingCommit, commit_kde, commit_mean, commit_pca, kde_tradeoff, ledger_state, ledger_store_note,
                     looked_at_field, mean_tradeoff, pca_ledger_entry, prepare_kde_commit, prepare_mean_commit,
                     refuse_data_dependent)
from .replay import COMMIT_KINDS, data_mismatch, parse_config, replay
from .report import (ALPHA_SENTENCE, METHOD_LABELS, composition_table, entry_power, ledger_power, ledger_table,
                     native_parameter, power_figure, power_sentence, privacy_statement, release_figure, report_html,
                     tradeoff_figure)

__all__ = [
    "ALPHA_SENTENCE", "BUNDLE_FILES", "COMMIT_KINDS", "COMMIT_RANDOMNESS", "CONFIG_SCHEMA", "METHOD_LABELS",
    "NONPRIVATE_VIEWS", "NOTHING_DECLARED", "NOT_DP_WARNING", "NO_PERSISTENT_LEDGER", "ON_GRID_NOTE", "PCA_ACCURACY",
    "PCA_HARDENING", "PCA_NOT_EXPORTED", "PCA_ON_GRID", "PRE_REGISTERED", "RANDOMNESS_PCA", "RELEASE_SCHEMA",
    "SUMMARY_COMMIT_KINDS", "CommittedRelease", "MechanismAudit", "PendingCommit", "analyst_view_json",
    "audit_mean_mechanism", "bundle_files", "commit_kde", "commit_mean", "commit_pca", "composition_table",
    "config_yaml", "data_mismatch", "entry_power", "export_folder", "export_zip", "kde_tradeoff", "ledger_power",
    "ledger_state", "ledger_store_note", "ledger_table", "looked_at_field", "mean_tradeoff", "native_parameter",
    "parse_config", "pca_ledger_entry", "power_figure", "power_sentence", "prepare_kde_commit",
    "prepare_mean_commit", "privacy_statement", "refuse_data_dependent", "release_figure", "replay", "report_html",
    "tradeoff_figure",
]
