"""The arbiter: one game at a time — rules, clocks, dice, engine hosting, referee, records."""

import os as _os
import sys as _sys


def say(text: str) -> None:
    """A line on stderr (a warning, a remote participant's news) that may find its reader gone:
    ``arbiter match ... 2>&1 | head``. Before, the broken pipe raised from wherever it was said (an
    engine's start: the match ended with exit 3, "an engine could not be started"); now stderr
    goes to /dev/null from then on and the command carries on."""
    try:
        print(text, file=_sys.stderr, flush=True)
    except BrokenPipeError:
        _os.dup2(_os.open(_os.devnull, _os.O_WRONLY), _sys.stderr.fileno())
