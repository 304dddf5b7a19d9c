"""Game records: the record format (``record``), the results store (``store``) and replay/verify
(``replay``)."""
from .record import RECORD_FORMAT, Event, GameRecord, Opening, from_json, to_json

__all__ = ["RECORD_FORMAT", "Event", "GameRecord", "Opening", "from_json", "to_json"]
