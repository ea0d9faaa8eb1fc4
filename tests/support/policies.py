"""The retry policy of tests that run against a real local vault."""

from __future__ import annotations

from teamvault_mcp.vault.retry import RetryPolicy

#: The production rules with short pauses. The attempt limit stays generous: on a loaded machine a plain attempt
#: can take over a second, and one cut at 0.5 s was retried and answered `replayed` (issue 12). (The fault soak
#: scales every limit down on purpose, the attempt limit too, and keeps a policy of its own.)
FAST = RetryPolicy(pauses=(0.01, 0.02), jitter=0.0, key_in_use_pause=0.01, min_time_to_start=0.05, attempt_timeout=30)
