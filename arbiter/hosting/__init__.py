"""Engine hosting: an engine's process tree (``process``) and the conversation with it (``session``)."""
from .process import TOKEN_ENV, EngineConfig, EngineProcess, kill_engine_processes, kill_marked
from .session import (EngineFault, EngineSession, InProcessPlayer, InProcessSession, PlayerSpec, Session,
                      open_session, wait_any)

__all__ = ["TOKEN_ENV", "EngineConfig", "EngineProcess", "kill_engine_processes", "kill_marked", "EngineFault", "EngineSession",
           "InProcessPlayer", "InProcessSession", "PlayerSpec", "Session", "open_session", "wait_any"]
