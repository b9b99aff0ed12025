"""What every experiment shares: parameters and profiles, run directories with atomic writes and
provenance, the papers' reported numbers, claims and the ledger, the harness and the notebook runner."""
