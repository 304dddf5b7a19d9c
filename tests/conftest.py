"""Suite-wide hooks: one closing line naming the tests this machine could not run, and why (a
machine without bubblewrap or namespaces skips the sandbox tests; that must not pass unnoticed)."""
from __future__ import annotations

from collections import Counter

SANDBOX_SKIP = "needs the sandbox: "


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    reasons = Counter()
    for report in terminalreporter.stats.get("skipped", []):
        reason = str(report.longrepr[2]) if isinstance(report.longrepr, tuple) else str(report.longrepr)
        reason = reason.removeprefix("Skipped: ")
        if reason.startswith(SANDBOX_SKIP):
            reasons[reason[len(SANDBOX_SKIP):]] += 1
    if reasons:
        parts = [f"{n} sandbox test{'s' if n > 1 else ''} ({why})" for why, n in reasons.items()]
        terminalreporter.write_line("not run: " + "; ".join(parts), yellow=True)
