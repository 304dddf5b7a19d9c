"""Suite-wide hooks: one closing line naming the tests this machine could not run, and why (a
machine without bubblewrap or namespaces skips the sandbox tests, one without a C compiler or the
libzmq/msgpack-c headers the C engine's; that must not pass unnoticed)."""
from __future__ import annotations

from collections import Counter

SKIP_GROUPS = {
    "needs the sandbox: ": "sandbox",             # test_hostile.py
    "no sandbox here: ": "sandbox",               # test_isolation.py
    "needs the C engine's build tools: ": "C engine",  # test_c_engine.py
    "needs a browser: ": "web browser",           # test_web_browser.py
}
"""How the skip reasons of each group's tests begin, and the group's name; the rest is the problem."""


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    reasons = Counter()
    for report in terminalreporter.stats.get("skipped", []):
        reason = str(report.longrepr[2]) if isinstance(report.longrepr, tuple) else str(report.longrepr)
        reason = reason.removeprefix("Skipped: ")
        for prefix, group in SKIP_GROUPS.items():
            if reason.startswith(prefix):
                reasons[group, reason[len(prefix):]] += 1
    if reasons:
        parts = [f"{n} {group} test{'s' if n > 1 else ''} ({why})" for (group, why), n in reasons.items()]
        terminalreporter.write_line("not run: " + "; ".join(parts), yellow=True)
