"""The live web view of an event (docs/web.md): a read-only page, pushed updates (server-sent
events), fed by the referees' ``arbiter.feed`` without ever slowing a game."""
from .app import MemorySource, PortError, Source, WebServer, build_app

__all__ = ["MemorySource", "Source", "WebServer", "build_app", "PortError"]
