"""Errors of the Python API that have no topology rule behind them.

Topologies Kafka Streams rejects raise :class:`reference.model.errors.TopologyError` (the rules live in
:func:`reference.model.topology.check_topology`). The classes here mirror the Java exceptions Kafka's
API throws for everything else, so a user sees the same failure in the same place.
"""
from __future__ import annotations

from kssim.reference.model.errors import KssimError


class IllegalArgumentError(KssimError, ValueError):
    """Kafka's ``IllegalArgumentException``: an argument Kafka's API refuses (unknown topic,
    negative history retention, negative auto-advance)."""


class IllegalStateError(KssimError, RuntimeError):
    """Kafka's ``IllegalStateException``: a call not allowed in the object's state
    (``JoinWindows#grace`` after ``ofTimeDifference*``, a null key in ``readKeyValuesToMap``,
    a closed driver)."""


class NoSuchElementError(KssimError, LookupError):
    """Kafka's ``NoSuchElementException``: reading from an empty output topic."""


class UnsavableTopologyError(KssimError, ValueError):
    """The topology cannot be written as a scenario file (its joiner is a Python callable; a
    scenario file can only name ``pair`` or ``concat``)."""
