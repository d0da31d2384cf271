"""The per-scenario settings columns of an operator family (its rule columns among them).

Each family lists ``(name, Spark type, meaning)``; the columns from ``first_rule`` on are release
rules, named exactly as the profile's rules (``reference.model.profiles.RULES``) and read from the
profile by that name, so a grep for a rule finds its Spark column.
"""
from __future__ import annotations


def config_columns(columns, first_rule: str):
    """``(ddl, names, rule names)`` of a family's settings columns."""
    ddl = ", ".join(f"{name} {kind}" for name, kind, _ in columns)
    names = tuple(name for name, _, _ in columns)
    return ddl, names, names[names.index(first_rule):]
