"""The privacy budget: ledger arithmetic and composition, and the persistent ledger store."""
