"""Match formats: series of games between the same players (``match``: two-seat matches and the
``Series`` core every format uses; ``coop``: cooperative series; ``solo``: seeded solo suites).
Library code: they take inputs and return results; printing lives in ``arbiter.cli``."""
