"""Bad-input corpus and property tests (issue 14)."""
