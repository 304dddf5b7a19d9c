"""The live web view of an event (docs/web.md): a read-only page, pushed updates (server-sent
events), fed by the referees' ``arbiter.feed`` without ever slowing a game.

The server (``app``: Starlette, uvicorn, the rules for replays) is imported on first use: the
command lines that only parse ``--web PORT`` should not pay for it."""
from __future__ import annotations

import argparse
from typing import Any

from .process import PortError  # light: whoever starts the server child stays lean (arbiter.web.process)

__all__ = ["MemorySource", "Source", "WebServer", "build_app", "PortError", "parse_port"]


def parse_port(text: str) -> int:
    """A TCP port from a command line: 0 (any free one) to 65535 (argparse names the flag)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 0..65535, not {value}")
    return value


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import app

        return getattr(app, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
