"""The Spark backend's replays of store behaviour that is truly sequential per key."""
