"""Windowed aggregations and the windowed-table join on Spark (session, time and sliding windows)."""
