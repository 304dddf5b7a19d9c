"""The arbiter: one game at a time — rules, clocks, dice, engine hosting, referee, records."""

import os as _os
import sys as _sys

_HELD = ("SIGINT", "SIGTERM", "SIGHUP")
"""The operator's stops, held (blocked) from the start of a command until its own handling of them
is in place: one that came during the imports (0.3 s) ended the process by the signal (SIGTERM,
SIGHUP) or with a ``KeyboardInterrupt`` traceback (SIGINT) instead of the clean stop (exit 130)."""


def _a_command() -> bool:
    """Whether this process is the ``arbiter`` or ``arbiter-tournament`` command (as installed, or
    ``python -m arbiter.cli`` / ``-m tournaments``) rather than a program importing the package."""
    if _sys.argv and _os.path.basename(_sys.argv[0]) in ("arbiter", "arbiter-tournament"):
        return True
    orig = getattr(_sys, "orig_argv", [])
    if _sys.argv[:1] == ["-m"] and "-m" in orig[:-1]:  # argv[0] is "-m" while the module is found
        return orig[orig.index("-m") + 1] in ("arbiter.cli", "tournaments", "tournaments.cli")
    return False


def hold_operator_signals() -> None:
    """Block SIGINT, SIGTERM and SIGHUP in this command's process until ``release_operator_signals``:
    one that comes meanwhile waits, and is handled then as the command handles it."""
    import signal

    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_BLOCK, [getattr(signal, n) for n in _HELD if hasattr(signal, n)])


def release_operator_signals() -> None:
    """Unblock what ``hold_operator_signals`` blocked: a signal that came meanwhile is handled now
    (with Python's handler: a ``KeyboardInterrupt`` raised here)."""
    import signal

    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [getattr(signal, n) for n in _HELD if hasattr(signal, n)])


if _a_command():
    hold_operator_signals()


_stop_raised = False
"""The operator's stop was raised as a ``KeyboardInterrupt`` (``stop_raised``) and no loop that plays
has seen it since (``raise_a_lost_stop``)."""


def stop_raised(raised: bool = True) -> None:
    """Note that the operator's signal handler raised its ``KeyboardInterrupt`` (or, with False,
    that a new command starts with none)."""
    global _stop_raised
    _stop_raised = raised


def raise_a_lost_stop() -> None:
    """Raise the operator's stop again if it was lost. A ``KeyboardInterrupt`` raised where Python
    cannot pass an exception on (a ZeroMQ frame's ``__dealloc__``, any ``__del__``) is dropped
    (Python's "Exception ignored"): a ``kill PID`` that landed there was lost, and the match
    played on to its end. Called at the head of the loops that play (each decision, the
    director's each wait), which a stop that went its way has left for good."""
    global _stop_raised
    if _stop_raised:
        _stop_raised = False
        raise KeyboardInterrupt


def forget_handled_interrupts() -> None:
    """Called as a command returns, its interrupts handled. CPython 3.11 marks the process as ended
    by Ctrl-C when a ``KeyboardInterrupt`` leaves code that ``eval``/``exec`` ran from a string (a
    namedtuple's or a dataclass's generated methods, made as modules load) even if the caller then
    catches it; under ``python -m`` the interpreter then killed itself with SIGINT at exit (exit -2)
    after the command had said "interrupted" and saved everything, instead of exit 130 (1 run in
    ~30 when interrupted 0.15-0.2 s after the start). Evaluating a string clears the mark."""
    eval("None")  # noqa: S307  a constant: only run for its side effect on the mark


def say(text: str) -> None:
    """A line on stderr (a warning, a remote participant's news) that may find its reader gone:
    ``arbiter match ... 2>&1 | head``. Before, the broken pipe raised from wherever it was said (an
    engine's start: the match ended with exit 3, "an engine could not be started"); now stderr
    goes to /dev/null from then on and the command carries on."""
    try:
        print(text, file=_sys.stderr, flush=True)
    except BrokenPipeError:
        _os.dup2(_os.open(_os.devnull, _os.O_WRONLY), _sys.stderr.fileno())
