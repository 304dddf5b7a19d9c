"""Engine hosting: an engine's process tree and its confinement (``process``, ``sandbox``) and the
conversation with it (``session``)."""
from .process import (TOKEN_ENV, EngineConfig, EngineProcess, Limits, kill_engine_processes, kill_marked, parse_cpus,
                      pin_process)
from .sandbox import SandboxMode
from .session import (EngineFault, EngineSession, InProcessPlayer, InProcessSession, OptionFault, PlayerSpec, Session,
                      open_session, wait_any)

__all__ = ["TOKEN_ENV", "EngineConfig", "EngineProcess", "Limits", "kill_engine_processes", "kill_marked", "parse_cpus", "pin_process",
           "SandboxMode", "EngineFault", "EngineSession", "InProcessPlayer", "InProcessSession", "OptionFault", "PlayerSpec",
           "Session", "open_session", "wait_any"]
