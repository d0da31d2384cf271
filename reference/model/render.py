"""How kssim renders JSON keys and values in messages, tables and explanations (every engine)."""
from __future__ import annotations

import json


def show(value) -> str:
    """A compact, stable rendering of a JSON value for messages."""
    if value is None:
        return "null"
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, separators=(",", ":"))
