"""The option objects of Kafka Streams' DSL: ``JoinWindows``, ``Joined``, ``Materialized``,
``Stores`` and named ``ValueJoiner`` s.

Each is a small frozen value that maps onto a field of the topology specs
(:mod:`reference.model.topology`). Durations are milliseconds (``int``) or ``datetime.timedelta``.

Validation is not repeated here: a ``JoinWindows`` is checked, when it is made, by
:func:`reference.model.topology.check_topology` under the newest modelled release (whose API accepts
everything an older one does); the driver checks the topology again under the release it models.
Only what Kafka checks outside the topology rules lives here: ``grace()`` after an
``ofTimeDifference*`` factory (``IllegalStateException``), a negative history retention
(``Stores``), and the named joiners.
"""
from __future__ import annotations

import datetime
from typing import Optional

import attrs

from reference.model.errors import TopologyError
from reference.model.joiners import make_joiner
from reference.model.profiles import RELEASE_LINES, profile_for
from reference.model.topology import JOINER_NAMES, JoinWindowSpec, StreamStreamJoinSpec, check_topology
from reference.api.errors import IllegalArgumentError, IllegalStateError

_ONE_MS = datetime.timedelta(milliseconds=1)


def to_millis(value, what: str) -> int:
    """``value`` (int milliseconds or ``timedelta``) as int milliseconds; mirrors Kafka's
    ``ApiUtils.validateMillisecondDuration`` (null and non-millisecond values are refused)."""
    if isinstance(value, datetime.timedelta):
        if value % _ONE_MS:
            raise IllegalArgumentError(f"{what} must be a whole number of milliseconds, got {value!r}")
        return value // _ONE_MS
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be milliseconds (int) or a datetime.timedelta, got {value!r}")
    return value


def check_with_newest_api(spec) -> None:
    """Reject ``spec`` if even the newest modelled release's API would; release-specific checks
    (an API that did not exist yet) wait for the driver, which knows the release."""
    check_topology(spec, profile_for(RELEASE_LINES[-1]))


# --- ValueJoiner ------------------------------------------------------------------------------

@attrs.frozen
class ValueJoiner:
    """A named joiner of the scenario contract; mirrors Kafka's ``ValueJoiner`` interface.

    ``ValueJoiner.pair()`` returns ``[left, right]``; ``ValueJoiner.concat(separator)`` returns
    ``str(left) + separator + str(right)`` with Java's string rules. The join methods also take
    the names ``"pair"`` / ``"concat"`` and any Python callable ``(left, right) -> value``;
    only named joiners can be saved in a scenario file.
    """

    name: str
    separator: str = "+"

    def __attrs_post_init__(self):
        if self.name not in JOINER_NAMES:
            raise IllegalArgumentError(f"unknown joiner {self.name!r}: the named joiners are {', '.join(JOINER_NAMES)} "
                                       "(or pass a Python callable)")
        if not isinstance(self.separator, str):
            raise TypeError(f"a joiner separator must be a string, got {self.separator!r}")

    @classmethod
    def pair(cls) -> "ValueJoiner":
        return cls("pair")

    @classmethod
    def concat(cls, separator: str = "+") -> "ValueJoiner":
        return cls("concat", separator)

    def __call__(self, left, right):
        return make_joiner(self.name, self.separator)(left, right)


def joiner_fields(joiner) -> dict:
    """The spec fields (``joiner``, ``joiner_separator``) of a join method's joiner argument."""
    if isinstance(joiner, str):
        joiner = ValueJoiner(joiner)
    if isinstance(joiner, ValueJoiner):
        return {"joiner": joiner.name, "joiner_separator": joiner.separator}
    if joiner is None:
        raise TypeError("joiner can't be null")  # Kafka: Objects.requireNonNull(joiner, ...)
    if not callable(joiner):
        raise TypeError(f"a joiner is a callable (left, right) -> value, 'pair' or 'concat', got {joiner!r}")
    return {"joiner": joiner, "joiner_separator": "+"}


# --- JoinWindows -----------------------------------------------------------------------------

@attrs.frozen
class JoinWindows:
    """Kafka's ``JoinWindows``: a left record L and a right record R join iff
    ``L.ts - before_ms <= R.ts <= L.ts + after_ms``.

    Made by ``of_time_difference_and_grace(d, g)``, ``of_time_difference_with_no_grace(d)``
    (KIP-633, 3.1+, no spurious left/outer results) or the legacy ``of(d)`` (eager left/outer
    results; its grace is the modelled release's default unless ``grace(g)`` sets it).
    ``before(ms)`` / ``after(ms)`` return a copy with one bound changed, keeping the rest.
    A negative size (``before + after < 0``) or grace raises :class:`TopologyError`, like
    Kafka's ``IllegalArgumentException`` in the constructor.
    """

    before_ms: int
    after_ms: int
    grace_ms: Optional[int]
    #: "time_difference" (ofTimeDifference*) or "legacy" (of); the scenario field ``window_api``
    window_api: str

    def __attrs_post_init__(self):
        try:
            check_with_newest_api(StreamStreamJoinSpec(join="inner", window=self.spec, window_api=self.window_api))
        except TopologyError as exc:
            raise TopologyError("JoinWindows", exc.message) from None

    @classmethod
    def of_time_difference_and_grace(cls, time_difference, after_window_end) -> "JoinWindows":
        """``JoinWindows.ofTimeDifferenceAndGrace(timeDifference, afterWindowEnd)`` (3.1+)."""
        d = to_millis(time_difference, "timeDifference")
        return cls(d, d, to_millis(after_window_end, "afterWindowEnd"), "time_difference")

    @classmethod
    def of_time_difference_with_no_grace(cls, time_difference) -> "JoinWindows":
        """``JoinWindows.ofTimeDifferenceWithNoGrace(timeDifference)`` (3.1+): grace 0."""
        d = to_millis(time_difference, "timeDifference")
        return cls(d, d, 0, "time_difference")

    @classmethod
    def of(cls, time_difference) -> "JoinWindows":
        """``JoinWindows.of(timeDifference)`` (deprecated in 3.0): eager left/outer results; the
        grace is the modelled release's default (``grace_ms`` None) until ``grace()`` sets it."""
        d = to_millis(time_difference, "timeDifference")
        return cls(d, d, None, "legacy")

    def before(self, time_difference) -> "JoinWindows":
        """``JoinWindows#before(timeDifference)``: a copy with ``before_ms`` changed."""
        return attrs.evolve(self, before_ms=to_millis(time_difference, "timeDifference"))

    def after(self, time_difference) -> "JoinWindows":
        """``JoinWindows#after(timeDifference)``: a copy with ``after_ms`` changed."""
        return attrs.evolve(self, after_ms=to_millis(time_difference, "timeDifference"))

    def grace(self, after_window_end) -> "JoinWindows":
        """``JoinWindows#grace(afterWindowEnd)`` (2.1+, deprecated in 3.0), legacy windows only."""
        if self.window_api == "time_difference":
            # JoinWindows#grace re-uses the spurious-result-fix flag to detect this
            raise IllegalStateError("Cannot call grace() after setting grace value via ofTimeDifferenceAndGrace "
                                    "or ofTimeDifferenceWithNoGrace.")
        return attrs.evolve(self, grace_ms=to_millis(after_window_end, "afterWindowEnd"))

    def size(self) -> int:
        """``JoinWindows#size()``: before + after."""
        return self.before_ms + self.after_ms

    @property
    def spec(self) -> JoinWindowSpec:
        return JoinWindowSpec(before_ms=self.before_ms, after_ms=self.after_ms, grace_ms=self.grace_ms)


# --- Joined ----------------------------------------------------------------------------------

class _ClassOrInstanceMethod:
    """Callable on the class (a fresh default instance) or on an instance, like Kafka's
    ``Joined`` whose builders are reached either way."""

    def __init__(self, func):
        self.func = func
        self.__doc__ = func.__doc__

    def __get__(self, instance, owner):
        target = owner() if instance is None else instance
        return lambda *args, **kwargs: self.func(target, *args, **kwargs)


@attrs.frozen
class Joined:
    """Kafka's ``Joined`` for KStream-KTable joins; only the grace period (KIP-923, 3.6+) matters
    to the result. ``Joined.with_grace_period(ms)`` (or ``Joined.as_(name).with_grace_period(ms)``)
    buffers stream records for that long; the table must then be versioned with a history
    retention of at least the grace period (checked by :func:`reference.model.topology.check_topology`).
    """

    grace_ms: Optional[int] = None
    name: Optional[str] = attrs.field(default=None, eq=False)

    @classmethod
    def as_(cls, name: str) -> "Joined":
        """``Joined.as(name)``: names the join processor (no effect on the output)."""
        return cls(name=name)

    @_ClassOrInstanceMethod
    def with_grace_period(self, grace_period) -> "Joined":
        """``Joined#withGracePeriod(gracePeriod)``."""
        return attrs.evolve(self, grace_ms=to_millis(grace_period, "gracePeriod"))


# --- Stores and Materialized -----------------------------------------------------------------

@attrs.frozen
class KeyValueBytesStoreSupplier:
    """What ``Stores`` returns: a key-value store, or a versioned one (KIP-889, 3.5+)."""

    name: str
    versioned: bool = False
    history_retention_ms: Optional[int] = None


class Stores:
    """Kafka's ``Stores`` factory, for the stores a KTable source can be materialized in.

    Whether key-value and window stores are RocksDB or in-memory is the driver's ``store``
    argument (it applies to every store of the topology, as the scenario's ``config.store``).
    """

    @staticmethod
    def persistent_key_value_store(name: str) -> KeyValueBytesStoreSupplier:
        """``Stores.persistentKeyValueStore(name)``: an unversioned key-value store."""
        return KeyValueBytesStoreSupplier(_store_name(name))

    @staticmethod
    def persistent_versioned_key_value_store(name: str, history_retention_ms) -> KeyValueBytesStoreSupplier:
        """``Stores.persistentVersionedKeyValueStore(name, historyRetention)`` (KIP-889, 3.5+)."""
        retention = to_millis(history_retention_ms, "historyRetention")
        if retention < 0:
            raise IllegalArgumentError("historyRetention cannot be negative")  # Stores#persistentVersionedKeyValueStore
        return KeyValueBytesStoreSupplier(_store_name(name), versioned=True, history_retention_ms=retention)


def _store_name(name) -> str:
    if not isinstance(name, str):
        raise TypeError(f"name cannot be null and must be a string, got {name!r}")
    return name


@attrs.frozen
class Materialized:
    """Kafka's ``Materialized``, as passed to ``StreamsBuilder.table``: which store backs the table.

    ``Materialized.as_(store_name)`` is an unversioned key-value store;
    ``Materialized.as_(Stores.persistent_versioned_key_value_store(name, retention))`` a
    versioned one.
    """

    store: KeyValueBytesStoreSupplier

    @classmethod
    def as_(cls, store_name_or_supplier) -> "Materialized":
        """``Materialized.as(storeName)`` / ``Materialized.as(storeSupplier)``."""
        if isinstance(store_name_or_supplier, KeyValueBytesStoreSupplier):
            return cls(store_name_or_supplier)
        return cls(KeyValueBytesStoreSupplier(_store_name(store_name_or_supplier)))
