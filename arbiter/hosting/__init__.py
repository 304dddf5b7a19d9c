"""Engine hosting: an engine's process tree and its confinement (``process``, ``sandbox``) and the
conversation with it (``session``).

The names below load their module on first use (PEP 562), so a command that only reads records
(``arbiter show``) does not pay for psutil, ZeroMQ and the sessions."""
from __future__ import annotations

import importlib
from typing import Any

_HOMES = {
    "process": ["TOKEN_ENV", "EngineConfig", "EngineProcess", "Limits", "kill_engine_processes", "kill_marked",
                "parse_cpus", "pin_process"],
    "sandbox": ["SandboxMode"],
    "session": ["EngineFault", "EngineSession", "InProcessPlayer", "InProcessSession", "OptionFault", "PlayerSpec",
                "Session", "open_session", "wait_any"],
}
_HOME = {name: module for module, names in _HOMES.items() for name in names}

__all__ = list(_HOME)


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
