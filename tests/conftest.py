"""Suite-wide hooks: one closing line naming the tests this machine could not run, and why (a
machine without bubblewrap or namespaces skips the sandbox tests, one without a C compiler or the
libzmq/msgpack-c headers the C engine's; that must not pass unnoticed); and, when pytest-xdist
runs files side by side (``make test``), a ``serial`` test runs with nothing beside it."""
from __future__ import annotations

import fcntl
from collections import Counter

import pytest

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


@pytest.fixture(autouse=True)
def _alone_when_serial(request, tmp_path_factory):
    """Under pytest-xdist, a readers-writer lock shared by the run's workers: every test holds the
    room shared, a ``serial`` test (it measures time on a quiet machine, or changes machine-wide
    folders) holds it alone. The gate is taken first by all, and held by a serial test until it
    is in, so the other workers cannot keep it waiting by taking turns in the room."""
    if not hasattr(request.config, "workerinput"):  # not under xdist: one test at a time anyway
        yield
        return
    shared = tmp_path_factory.getbasetemp().parent  # pytest-N/, the same for every worker of this run
    alone = request.node.get_closest_marker("serial") is not None
    with open(shared / "serial.gate", "a") as gate, open(shared / "serial.room", "a") as room:
        fcntl.flock(gate, fcntl.LOCK_EX)
        try:
            fcntl.flock(room, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        finally:
            fcntl.flock(gate, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(room, fcntl.LOCK_UN)


class FeedViewer:
    """What the web view does with the live feed (``arbiter.feed``): binds a SUB socket and reads
    it all the time, in a thread. Read all the time it must be: ZeroMQ attaches a publisher that
    connects to a bound socket, and sends it the subscription, only when the socket is next used,
    so a viewer read only later misses what was published meanwhile."""

    def __init__(self, endpoint: str):
        import threading

        self.endpoint, self.messages = endpoint, []
        self._bound, self._stop = threading.Event(), threading.Event()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()
        assert self._bound.wait(10)

    def _read(self) -> None:
        import msgspec
        import zmq

        sock = zmq.Context.instance().socket(zmq.SUB)
        sock.setsockopt(zmq.SUBSCRIBE, b"")
        sock.setsockopt(zmq.LINGER, 0)
        sock.bind(self.endpoint)
        self._bound.set()
        try:
            while not self._stop.is_set():
                if sock.poll(20):
                    self.messages.append(msgspec.msgpack.decode(sock.recv()))
        finally:
            sock.close(0)

    def wait_for(self, kind: str, game_id: str, timeout: float) -> bool:
        """Whether a message of ``kind`` about ``game_id`` came within ``timeout`` seconds."""
        import time

        deadline = time.monotonic() + timeout
        while not any(m["type"] == kind and m["game_id"] == game_id for m in list(self.messages)):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)
        return True

    def close(self) -> None:
        self._stop.set()
        self._thread.join(10)


@pytest.fixture
def feed_viewer(tmp_path):
    viewer = FeedViewer(f"ipc://{tmp_path}/feed")
    yield viewer
    viewer.close()


@pytest.fixture(scope="module")
def web_servers_at_games_priority():
    """The web servers a module starts run at niceness 0 (``ARBITER_WEB_NICE``), not 19: beside the
    other worker's tests (or busy loops) a server at 19 gets ~1 % of a core, and a page waited over a
    minute for it. Every test of test_web_browser.py takes it through ``site``. The default
    niceness is checked on its own (test_web.py)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ARBITER_WEB_NICE", "0")
        yield


def left_after(folder, seconds: float = 10) -> list[str]:
    """What is still in ``folder`` once it has emptied or ``seconds`` have passed: the guardians'
    clean-up after a referee's ``kill -9`` takes a moment."""
    import time

    deadline = time.monotonic() + seconds
    while any(folder.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return sorted(p.name for p in folder.iterdir())
