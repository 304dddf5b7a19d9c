"""Suite-wide hooks: one closing line naming the tests this machine could not run, and why (a
machine without bubblewrap or namespaces skips the sandbox tests; that must not pass unnoticed)."""
from __future__ import annotations

from collections import Counter

SANDBOX_SKIPS = ("needs the sandbox: ", "no sandbox here: ")
"""How the skip reasons of sandbox tests begin (test_hostile.py, test_isolation.py); the rest is the problem."""


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    reasons = Counter()
    for report in terminalreporter.stats.get("skipped", []):
        reason = str(report.longrepr[2]) if isinstance(report.longrepr, tuple) else str(report.longrepr)
        reason = reason.removeprefix("Skipped: ")
        for prefix in SANDBOX_SKIPS:
            if reason.startswith(prefix):
                reasons[reason[len(prefix):]] += 1
    if reasons:
        parts = [f"{n} sandbox test{'s' if n > 1 else ''} ({why})" for why, n in reasons.items()]
        terminalreporter.write_line("not run: " + "; ".join(parts), yellow=True)
