"""The arbiter: one game at a time — rules, clocks, dice, engine hosting, referee, records."""
