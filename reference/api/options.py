"""The option objects of Kafka Streams' DSL: ``JoinWindows``, ``Joined``, ``Materialized``,
``Stores``, named ``ValueJoiner`` s; for windowed aggregations ``TimeWindows``, ``SessionWindows``,
``SlidingWindows``, ``EmitStrategy``; for ``KTable#suppress`` ``Suppressed`` and ``BufferConfig``;
and the one named ``KeyValueMapper`` (the window shift of a windowed-table join).

Each is a small frozen value that maps onto a field of the topology specs
(:mod:`reference.model.topology`). Durations are milliseconds (``int``) or ``datetime.timedelta``.

Validation is not repeated here: windows are checked, when they are made, by
:func:`reference.model.topology.check_topology` under the newest modelled release whose API has
the builder used (whose API accepts everything an older one does; a legacy builder such as
``TimeWindows.of`` is checked under the last release that had it); the driver checks the topology
again under the release it models. Only what Kafka checks outside the topology rules lives here:
``grace()`` after an ``ofTimeDifference*`` / ``ofSize*`` / ``ofInactivityGap*`` factory
(``IllegalStateException``), a negative history retention (``Stores``) or store retention
(``Materialized``), and the named joiners and aggregations.
"""
from __future__ import annotations

import datetime
from typing import Optional

import attrs

from kssim.reference.model.aggregations import AGGREGATION_NAMES, aggregation_from_callables, named_aggregation
from kssim.reference.model.errors import TopologyError
from kssim.reference.model.joiners import make_joiner
from kssim.reference.model.profiles import RELEASE_LINES, profile_for
from kssim.reference.model.records import windowed_key
from kssim.reference.model.topology import (
    JOINER_NAMES, JoinWindowSpec, SessionAggregateSpec, SlidingAggregateSpec, StreamStreamJoinSpec, SuppressBufferSpec,
    SuppressSpec, TimeWindowSpec, WindowAggregateSpec, check_topology,
)
from kssim.reference.api.errors import IllegalArgumentError, IllegalStateError

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
    """Reject ``spec`` if even the newest modelled release's API that has its builders would;
    release-specific checks (an API that did not exist yet, or no longer) wait for the driver,
    which knows the release."""
    check_topology(spec, _newest_profile_for(spec))


def _newest_profile_for(spec):
    """The newest modelled release, or for a spec built with a legacy window builder (``grace_ms``
    None: ``TimeWindows.of``, ``SessionWindows.with``) the newest one that still had it
    [legacy_window_builders_removed]."""
    newest = profile_for(RELEASE_LINES[-1])
    if not _uses_legacy_window_builder(spec):
        return newest
    for release in reversed(RELEASE_LINES):
        profile = profile_for(release)
        if not profile.legacy_window_builders_removed:
            return profile
    return newest


def _uses_legacy_window_builder(spec) -> bool:
    if isinstance(spec, SessionAggregateSpec):
        return spec.grace_ms is None
    window = getattr(spec, "window", None)
    return isinstance(window, TimeWindowSpec) and window.grace_ms is None


def _checked(kind: str, spec) -> None:
    """Check ``spec`` with the newest API; its errors are reported against ``kind`` (the option's
    class, as Kafka's constructors throw)."""
    try:
        check_with_newest_api(spec)
    except TopologyError as exc:
        raise TopologyError(kind, exc.message) from None


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
    """Kafka's ``Materialized``: which store backs a table, and (windowed aggregations) how long
    it keeps windows.

    For ``StreamsBuilder.table``: ``Materialized.as_(store_name)`` is an unversioned key-value
    store; ``Materialized.as_(Stores.persistent_versioned_key_value_store(name, retention))`` a
    versioned one. For a windowed aggregation (``count`` / ``aggregate`` / ``reduce``):
    ``Materialized.with_retention(ms)`` or ``Materialized.as_(name).with_retention(ms)`` keeps
    windows for ``retention_ms`` (the spec's ``retention_ms``; at least size + grace, checked when
    the aggregation is built). Whether stores are RocksDB or in-memory is the driver's ``store``.
    """

    #: the supplier given to ``as_`` (None: a store name, or no store at all)
    store: Optional[KeyValueBytesStoreSupplier] = None
    store_name: Optional[str] = None
    retention_ms: Optional[int] = None

    @classmethod
    def as_(cls, store_name_or_supplier) -> "Materialized":
        """``Materialized.as(storeName)`` / ``Materialized.as(storeSupplier)``."""
        if isinstance(store_name_or_supplier, KeyValueBytesStoreSupplier):
            return cls(store=store_name_or_supplier)
        return cls(store_name=_store_name(store_name_or_supplier))

    @_ClassOrInstanceMethod
    def with_retention(self, retention) -> "Materialized":
        """``Materialized#withRetention(retention)`` (KIP-328, 2.1+): how long a windowed
        aggregation's store keeps windows."""
        retention_ms = to_millis(retention, "retention")
        if retention_ms < 0:
            raise IllegalArgumentError("Retention must not be negative.")  # Materialized#withRetention
        return attrs.evolve(self, retention_ms=retention_ms)

    @_ClassOrInstanceMethod
    def with_caching_disabled(self) -> "Materialized":
        """``Materialized#withCachingDisabled()``: kssim always models record caches off, so this
        changes nothing (a scenario's results are those of a cache-less run)."""
        return self

    def key_value_store(self) -> KeyValueBytesStoreSupplier:
        """The key-value store a KTable source is materialized in (``StreamsBuilder.table``)."""
        if self.store is not None:
            return self.store
        return KeyValueBytesStoreSupplier(self.store_name or "")

    def windowed_retention(self, method: str) -> Optional[int]:
        """``retention_ms`` for a windowed aggregation ``method``; a key-value store supplier does
        not fit there (in Java, a type error: the method takes a window or session store)."""
        if self.store is not None:
            raise TypeError(f"{method} materializes a window or session store; "
                            f"Materialized.as_({self.store!r}) is a key-value store supplier")
        return self.retention_ms


def materialized_retention(materialized, method: str) -> Optional[int]:
    """The ``retention_ms`` a windowed aggregation's ``materialized`` argument asks for."""
    if materialized is None:
        return None
    if not isinstance(materialized, Materialized):
        raise TypeError(f"{method} takes a Materialized, got {materialized!r}")
    return materialized.windowed_retention(method)


# --- windows of windowed aggregations --------------------------------------------------------

@attrs.frozen
class TimeWindows:
    """Kafka's ``TimeWindows``: windows ``[start, start + size_ms)`` every ``advance_ms``
    (tumbling unless ``advance_by`` makes them hopping).

    ``of_size_with_no_grace(size)`` / ``of_size_and_grace(size, grace)`` (KIP-633, 3.0+) or the
    legacy ``of(size)`` (removed in 4.0), whose grace is the modelled release's default
    (``grace_ms`` None) until ``grace(g)`` sets it. A size of 0, an advance outside ``(0, size]``
    or a negative grace raise :class:`TopologyError`, like Kafka's ``IllegalArgumentException``.
    """

    size_ms: int
    advance_ms: int
    grace_ms: Optional[int]
    #: Kafka's ``hasSetGrace``: set by the ``ofSize*`` factories, cleared by ``advanceBy``
    grace_set_by_factory: bool = attrs.field(default=False, eq=False, repr=False)

    def __attrs_post_init__(self):
        _checked("TimeWindows", WindowAggregateSpec(window=self.spec))

    @classmethod
    def of_size_with_no_grace(cls, size) -> "TimeWindows":
        """``TimeWindows.ofSizeWithNoGrace(size)`` (3.0+): grace 0."""
        size_ms = to_millis(size, "size")
        return cls(size_ms, size_ms, 0, True)

    @classmethod
    def of_size_and_grace(cls, size, after_window_end) -> "TimeWindows":
        """``TimeWindows.ofSizeAndGrace(size, afterWindowEnd)`` (3.0+)."""
        size_ms = to_millis(size, "size")
        return cls(size_ms, size_ms, to_millis(after_window_end, "afterWindowEnd"), True)

    @classmethod
    def of(cls, size) -> "TimeWindows":
        """``TimeWindows.of(size)`` (deprecated in 3.0, removed in 4.0): the grace is the modelled
        release's default (``grace_ms`` None) until ``grace()`` sets it."""
        size_ms = to_millis(size, "size")
        return cls(size_ms, size_ms, None)

    def advance_by(self, advance) -> "TimeWindows":
        """``TimeWindows#advanceBy(advance)``: hopping windows. As in Kafka, the copy forgets that
        an ``ofSize*`` factory set the grace, so ``grace()`` may follow it."""
        return TimeWindows(self.size_ms, to_millis(advance, "advance"), self.grace_ms)

    def grace(self, after_window_end) -> "TimeWindows":
        """``TimeWindows#grace(afterWindowEnd)`` (2.1+, deprecated in 3.0, removed in 4.0)."""
        if self.grace_set_by_factory:
            raise IllegalStateError("Cannot call grace() after setting grace value via ofSizeAndGrace or "
                                    "ofSizeWithNoGrace.")
        return TimeWindows(self.size_ms, self.advance_ms, to_millis(after_window_end, "afterWindowEnd"))

    def size(self) -> int:
        """``TimeWindows#size()``."""
        return self.size_ms

    @property
    def spec(self) -> TimeWindowSpec:
        return TimeWindowSpec(size_ms=self.size_ms, advance_ms=self.advance_ms, grace_ms=self.grace_ms)


@attrs.frozen
class SessionWindows:
    """Kafka's ``SessionWindows`` (KIP-94): a key's records closer than ``gap_ms`` form one session
    ``[first ts, last ts]``.

    ``of_inactivity_gap_with_no_grace(gap)`` / ``of_inactivity_gap_and_grace(gap, grace)``
    (KIP-633, 3.0+) or the legacy ``with_(gap)`` (``SessionWindows.with``, removed in 4.0), whose
    grace is the modelled release's default (``grace_ms`` None) until ``grace(g)`` sets it.
    """

    gap_ms: int
    grace_ms: Optional[int]
    grace_set_by_factory: bool = attrs.field(default=False, eq=False, repr=False)

    def __attrs_post_init__(self):
        _checked("SessionWindows", SessionAggregateSpec(gap_ms=self.gap_ms, grace_ms=self.grace_ms))

    @classmethod
    def of_inactivity_gap_with_no_grace(cls, inactivity_gap) -> "SessionWindows":
        """``SessionWindows.ofInactivityGapWithNoGrace(inactivityGap)`` (3.0+): grace 0."""
        return cls(to_millis(inactivity_gap, "inactivityGap"), 0, True)

    @classmethod
    def of_inactivity_gap_and_grace(cls, inactivity_gap, after_window_end) -> "SessionWindows":
        """``SessionWindows.ofInactivityGapAndGrace(inactivityGap, afterWindowEnd)`` (3.0+)."""
        return cls(to_millis(inactivity_gap, "inactivityGap"), to_millis(after_window_end, "afterWindowEnd"), True)

    @classmethod
    def with_(cls, inactivity_gap) -> "SessionWindows":
        """``SessionWindows.with(inactivityGap)`` (deprecated in 3.0, removed in 4.0): the grace is
        the modelled release's default (``grace_ms`` None) until ``grace()`` sets it."""
        return cls(to_millis(inactivity_gap, "inactivityGap"), None)

    def grace(self, after_window_end) -> "SessionWindows":
        """``SessionWindows#grace(afterWindowEnd)`` (2.1+, deprecated in 3.0, removed in 4.0)."""
        if self.grace_set_by_factory:
            raise IllegalStateError("Cannot call grace() after setting grace value via ofInactivityGapAndGrace or "
                                    "ofInactivityGapWithNoGrace.")
        return SessionWindows(self.gap_ms, to_millis(after_window_end, "afterWindowEnd"))

    def inactivity_gap(self) -> int:
        """``SessionWindows#inactivityGap()``."""
        return self.gap_ms


@attrs.frozen
class SlidingWindows:
    """Kafka's ``SlidingWindows`` (KIP-450, 2.7+): windows ``[start, start + time_difference_ms]``,
    both ends inclusive, made by ``of_time_difference_with_no_grace(d)`` /
    ``of_time_difference_and_grace(d, grace)``. A negative difference or grace raises
    :class:`TopologyError`."""

    time_difference_ms: int
    grace_ms: int

    def __attrs_post_init__(self):
        _checked("SlidingWindows", SlidingAggregateSpec(time_difference_ms=self.time_difference_ms,
                                                        grace_ms=self.grace_ms))

    @classmethod
    def of_time_difference_with_no_grace(cls, time_difference) -> "SlidingWindows":
        """``SlidingWindows.ofTimeDifferenceWithNoGrace(timeDifference)``: grace 0."""
        return cls(to_millis(time_difference, "timeDifference"), 0)

    @classmethod
    def of_time_difference_and_grace(cls, time_difference, after_window_end) -> "SlidingWindows":
        """``SlidingWindows.ofTimeDifferenceAndGrace(timeDifference, afterWindowEnd)``."""
        return cls(to_millis(time_difference, "timeDifference"), to_millis(after_window_end, "afterWindowEnd"))


@attrs.frozen
class EmitStrategy:
    """Kafka's ``EmitStrategy`` (KIP-825, 3.3+), for ``emit_strategy`` of a windowed stream:
    ``on_window_update()`` (every update, the default) or ``on_window_close()`` (each window once,
    when it closes). ``emit`` is the spec's field."""

    emit: str

    @classmethod
    def on_window_update(cls) -> "EmitStrategy":
        """``EmitStrategy.onWindowUpdate()``."""
        return cls("on_update")

    @classmethod
    def on_window_close(cls) -> "EmitStrategy":
        """``EmitStrategy.onWindowClose()``."""
        return cls("on_window_close")


# --- aggregations ----------------------------------------------------------------------------

def _reduce_names():
    return tuple(n for n in AGGREGATION_NAMES if named_aggregation(n).is_reduce)


def _aggregate_names():
    return tuple(n for n in AGGREGATION_NAMES if not named_aggregation(n).is_reduce)


def _check_merge_separator(merge_separator) -> None:
    if not isinstance(merge_separator, str):
        raise TypeError(f"merge_separator must be a string, got {merge_separator!r}")


def named_aggregate_fields(name, merge_separator: str) -> dict:
    """The spec fields of ``aggregate(name)``: a named aggregation with an initializer."""
    _check_merge_separator(merge_separator)
    if name not in _aggregate_names():
        hint = " (a reduce: use reduce(...))" if name in _reduce_names() else ""
        raise IllegalArgumentError(f"unknown aggregation {name!r}{hint}: aggregate() takes the named aggregations "
                                   f"{', '.join(_aggregate_names())}, or an initializer and an aggregator")
    return {"aggregation": name, "merge_separator": merge_separator}


def named_reduce_fields(name, merge_separator: str) -> dict:
    """The spec fields of ``reduce(name)``: a named reduce."""
    _check_merge_separator(merge_separator)
    if name not in _reduce_names():
        hint = " (it has an initializer: use aggregate(...))" if name in _aggregate_names() else ""
        raise IllegalArgumentError(f"unknown reducer {name!r}{hint}: reduce() takes the named reduce "
                                   f"{', '.join(_reduce_names())} or a reducer (aggregate, value) -> aggregate")
    return {"aggregation": name, "merge_separator": merge_separator}


def _require_callable(value, what: str, signature: str) -> None:
    if value is None:
        raise TypeError(f"{what} can't be null")  # Kafka: Objects.requireNonNull(..., "<what> can't be null")
    if not callable(value):
        raise TypeError(f"{what} must be a callable {signature}, got {value!r}")


def callable_aggregate_fields(initializer, aggregator, merger, merge_separator: str, merger_required: bool) -> dict:
    """The spec fields of ``aggregate(initializer, aggregator[, session_merger])``: a Python
    :class:`Aggregation` (``merger`` None: time windows, which never merge)."""
    _require_callable(initializer, "initializer", "() -> aggregate")
    _require_callable(aggregator, "aggregator", "(key, value, aggregate) -> aggregate")
    if merger_required:
        _require_callable(merger, "sessionMerger", "(key, aggregate1, aggregate2) -> aggregate")
    _no_separator_for_callables(merge_separator)
    return {"aggregation": aggregation_from_callables(initializer, aggregator, merger, name=_callable_name(aggregator)),
            "merge_separator": "+"}


def callable_reduce_fields(reducer, merge_separator: str) -> dict:
    """The spec fields of ``reduce(reducer)``: a Python :class:`Aggregation` without initializer."""
    _require_callable(reducer, "reducer", "(aggregate, value) -> aggregate")
    _no_separator_for_callables(merge_separator)
    return {"aggregation": aggregation_from_callables(reducer=reducer, name=_callable_name(reducer)),
            "merge_separator": "+"}


def _no_separator_for_callables(merge_separator) -> None:
    if merge_separator != "+":
        raise TypeError("merge_separator belongs to the named aggregations' session merger; "
                        "Python callables bring their own session_merger")


def _callable_name(func) -> str:
    return getattr(func, "__qualname__", None) or repr(func)


# --- Suppressed and BufferConfig -------------------------------------------------------------

def _limit(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be an integer, got {value!r}")
    return value


@attrs.frozen
class BufferConfig:
    """Kafka's ``Suppressed.BufferConfig``: how much a suppress buffer may hold and what happens
    when it is full. ``spec`` is the scenario's ``suppress.buffer``.

    ``BufferConfig.unbounded()`` is a strict buffer (``StrictBufferConfig``);
    ``BufferConfig.max_records(n)`` / ``max_bytes(n)`` are *eager* (``EagerBufferConfig``: the
    oldest records are emitted early when full) until ``shut_down_when_full()`` makes them strict
    (the application dies instead). ``with_max_records`` / ``with_max_bytes`` add a bound and keep
    the strategy; ``with_no_bound()`` is strict and unbounded. Only a strict buffer may follow
    ``Suppressed.until_window_closes``.
    """

    spec: SuppressBufferSpec

    @classmethod
    def max_records(cls, record_limit) -> "BufferConfig":
        """``BufferConfig.maxRecords(recordLimit)``: eager (emit early when full)."""
        return cls(SuppressBufferSpec(max_records=_limit(record_limit, "recordLimit"), when_full="emit_early"))

    @classmethod
    def max_bytes(cls, byte_limit) -> "BufferConfig":
        """``BufferConfig.maxBytes(byteLimit)``: eager (emit early when full)."""
        return cls(SuppressBufferSpec(max_bytes=_limit(byte_limit, "byteLimit"), when_full="emit_early"))

    @classmethod
    def unbounded(cls) -> "BufferConfig":
        """``BufferConfig.unbounded()``: strict, no bound."""
        return cls(SuppressBufferSpec())

    def with_max_records(self, record_limit) -> "BufferConfig":
        """``BufferConfig#withMaxRecords(recordLimit)``: same strategy."""
        return BufferConfig(attrs.evolve(self.spec, max_records=_limit(record_limit, "recordLimit")))

    def with_max_bytes(self, byte_limit) -> "BufferConfig":
        """``BufferConfig#withMaxBytes(byteLimit)``: same strategy."""
        return BufferConfig(attrs.evolve(self.spec, max_bytes=_limit(byte_limit, "byteLimit")))

    def with_no_bound(self) -> "BufferConfig":
        """``BufferConfig#withNoBound()``: strict and unbounded."""
        return BufferConfig(SuppressBufferSpec())

    def shut_down_when_full(self) -> "BufferConfig":
        """``BufferConfig#shutDownWhenFull()``: strict; a record that overflows the buffer kills
        the application (:class:`reference.model.errors.KafkaWouldFail`)."""
        return BufferConfig(attrs.evolve(self.spec, when_full="shut_down"))

    def emit_early_when_full(self) -> "BufferConfig":
        """``BufferConfig#emitEarlyWhenFull()``: eager; the oldest records are emitted early."""
        return BufferConfig(attrs.evolve(self.spec, when_full="emit_early"))

    def with_logging_disabled(self) -> "BufferConfig":
        """``BufferConfig#withLoggingDisabled()``: the changelog does not change the output."""
        return self

    def with_logging_enabled(self, config=None) -> "BufferConfig":
        """``BufferConfig#withLoggingEnabled(config)``: the changelog does not change the output."""
        return self

    @property
    def is_strict(self) -> bool:
        return self.spec.when_full == "shut_down"


@attrs.frozen
class Suppressed:
    """Kafka's ``Suppressed``, for ``KTable.suppress``: ``spec`` is the scenario's ``suppress``.

    ``Suppressed.until_window_closes(strict_buffer)`` holds each window's updates until stream
    time passes the window's end plus its grace, then emits the final result (windowed tables
    only); ``Suppressed.until_time_limit(ms, buffer)`` holds each key's latest update for
    ``ms`` of stream time.
    """

    spec: SuppressSpec
    name: Optional[str] = attrs.field(default=None, eq=False)

    @classmethod
    def until_window_closes(cls, buffer_config: Optional[BufferConfig]) -> "Suppressed":
        """``Suppressed.untilWindowCloses(bufferConfig)``; the buffer must be strict (in Java,
        an ``EagerBufferConfig`` is a type error: emitting early would emit non-final results)."""
        buffer = _buffer_of(buffer_config)
        if not buffer.is_strict:
            raise TypeError("untilWindowCloses takes a strict buffer (BufferConfig.unbounded(), or a bounded one "
                            "with .shut_down_when_full()); an eager buffer would emit non-final results")
        return cls(SuppressSpec(until="window_close", buffer=buffer.spec))

    @classmethod
    def until_time_limit(cls, time_to_wait_for_more_events, buffer_config: Optional[BufferConfig]) -> "Suppressed":
        """``Suppressed.untilTimeLimit(timeToWaitForMoreEvents, bufferConfig)``."""
        time_limit = to_millis(time_to_wait_for_more_events, "timeToWaitForMoreEvents")
        return cls(SuppressSpec(until="time_limit", time_limit_ms=time_limit, buffer=_buffer_of(buffer_config).spec))

    def with_name(self, name: str) -> "Suppressed":
        """``Suppressed#withName(name)``: names the processor (no effect on the output)."""
        return attrs.evolve(self, name=_store_name(name))


#: Kafka reaches it as ``Suppressed.BufferConfig``
Suppressed.BufferConfig = BufferConfig


def _buffer_of(buffer_config) -> BufferConfig:
    if buffer_config is None:
        return BufferConfig.unbounded()  # SuppressedInternal: a null buffer config is unbounded
    if not isinstance(buffer_config, BufferConfig):
        raise TypeError(f"a suppress buffer is a BufferConfig, got {buffer_config!r}")
    return buffer_config


# --- KeyValueMapper --------------------------------------------------------------------------

@attrs.frozen
class KeyValueMapper:
    """The one named ``KeyValueMapper`` of the scenario contract, for ``KStream.map``:
    ``KeyValueMapper.shift_window(ms)`` maps a windowed key to the same key in the window ``ms``
    later, as the shifted windowed-table join (``shift_ms``) does to its right side::

        (wk, v) -> KeyValue.pair(new Windowed<>(wk.key(), new TimeWindow(wk.window().start() + ms,
                                                                         wk.window().end() + ms)), v)
    """

    shift_ms: int

    @classmethod
    def shift_window(cls, shift) -> "KeyValueMapper":
        return cls(to_millis(shift, "shift"))

    def __call__(self, key, value):
        """``(windowed key {"key","start","end"}, value) -> (shifted key, value)``."""
        return windowed_key(key["key"], key["start"] + self.shift_ms, key["end"] + self.shift_ms), value


# --- the arguments of topology graphs ----------------------------------------------------------
#
# A DSL call of a topology graph is written as the graph node the spec defines
# (``../shared/spec/topology-graphs.md``); where the user gives a Python callable instead of a
# JSON expression, predicate, joiner or aggregation, the node holds a placeholder that the graph
# reader accepts, and the callable (adapted to the engine's ``(key, value)`` form) replaces it in
# the parsed node's operation: a :class:`GraphArg` carries both.

@attrs.frozen
class GraphArg:
    """A graph node's argument: ``json`` (what a scenario file would say; placeholders where a
    callable goes), ``callables`` (operation field -> the engine's callable) and ``users`` (the
    user's callables, for the error that says the topology cannot be saved)."""

    json: object
    callables: dict = attrs.field(factory=dict)
    users: tuple = ()


def _graph_fail(where, message):
    return TopologyError(where, message)


#: placeholders the graph reader accepts where a callable goes (never evaluated)
EXPR_PLACEHOLDER = "$value"
PRED_PLACEHOLDER = {"and": []}


def _positional_count(func) -> Optional[int]:
    """How many positional arguments ``func`` takes, or None when Python cannot say."""
    import inspect

    try:
        params = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return None
    return sum(1 for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty)


def _named_like(wrapper, func):
    wrapper.__qualname__ = wrapper.__name__ = _callable_name(func)
    wrapper.__wrapped__ = func
    return wrapper


def _value_mapper(func):
    """Kafka's ``ValueMapper`` ``value -> ...`` (one argument) or ``ValueMapperWithKey``
    ``(key, value) -> ...``, as the engine's ``(key, value)`` function."""
    if _positional_count(func) == 1:
        return _named_like(lambda key, value: func(value), func)
    return func


def expr_arg(mapper, where: str, what: str, field: str = "mapper", value_only: bool = False) -> GraphArg:
    """An EXPR argument (the operation's ``field``): a JSON expression (``"$key"``,
    ``{"field": "g"}``, ...; checked now) or a Python callable ``(key, value) -> value``
    (``value_only``: also ``value -> value``, Kafka's ``ValueMapper``)."""
    if mapper is None:
        raise TypeError(f"{what} can't be null")
    if callable(mapper) and not isinstance(mapper, (str, dict)):
        return GraphArg(EXPR_PLACEHOLDER, {field: _value_mapper(mapper) if value_only else mapper}, (mapper,))
    from kssim.reference.model.graph.expressions import parse_expr

    parse_expr(mapper, where, _graph_fail)
    return GraphArg(mapper)


def pred_arg(predicate, where: str) -> GraphArg:
    """A PRED argument: a JSON predicate (``{"cmp": [...]}``; checked now) or a Python callable
    ``(key, value) -> bool`` (Kafka's ``Predicate``)."""
    if predicate is None:
        raise TypeError("predicate can't be null")
    if callable(predicate) and not isinstance(predicate, dict):
        return GraphArg(PRED_PLACEHOLDER, {"predicate": predicate}, (predicate,))
    from kssim.reference.model.graph.expressions import parse_pred

    parse_pred(predicate, where, _graph_fail)
    return GraphArg(predicate)


def key_value_arg(mapper, where: str, what: str, value_default: bool = False) -> GraphArg:
    """The ``{"key": EXPR, "value": EXPR}`` argument of ``map`` and ``KTable#groupBy``: that
    object (``value_default``: ``value`` may be left out) or a Python callable
    ``(key, value) -> (new key, new value)`` (a ``KeyValue`` or any pair), called once per record."""
    if mapper is None:
        raise TypeError(f"{what} can't be null")
    if callable(mapper) and not isinstance(mapper, dict):
        cell = [None]

        def key_of(key, value):
            pair = mapper(key, value)
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise TypeError(f"{what} {_callable_name(mapper)} must return a (key, value) pair (a KeyValue), "
                                f"got {pair!r}")
            cell[0] = pair[1]
            return pair[0]

        def value_of(key, value):
            # called right after key_of for the same record (KStreamMap / KTableRepartitionMap)
            return cell[0]

        return GraphArg({"key": EXPR_PLACEHOLDER, "value": EXPR_PLACEHOLDER},
                        {"key": _named_like(key_of, mapper), "value": _named_like(value_of, mapper)}, (mapper,))
    if not isinstance(mapper, dict) or "key" not in mapper or not set(mapper) <= {"key", "value"} \
            or (not value_default and "value" not in mapper):
        fields = '{"key": EXPR, "value": EXPR}' + (' ("value" optional)' if value_default else "")
        raise TypeError(f"{what} is a callable (key, value) -> (key, value) or {fields}, got {mapper!r}")
    from kssim.reference.model.graph.expressions import parse_expr

    for field, expr in mapper.items():
        parse_expr(expr, f"{where}.{field}", _graph_fail)
    return GraphArg(dict(mapper))


def flat_mapper_arg(mapper, where: str) -> GraphArg:
    """``flatMapValues``' mapper: a JSON EXPR (a list result gives a record per element) or a
    Python callable ``value -> iterable`` / ``(key, value) -> iterable`` (None: no record; a string
    or a dict is one value, as it is not a Java ``Iterable``)."""
    arg = expr_arg(mapper, where, "mapper", value_only=True)
    if not arg.callables:
        return arg
    func = arg.callables["mapper"]

    def values(key, value):
        result = func(key, value)
        if result is None or isinstance(result, (list, str, bytes, dict)):
            return result
        return list(result)

    return attrs.evolve(arg, callables={"mapper": _named_like(values, mapper)})


def foreign_key_arg(extractor, where: str) -> GraphArg:
    """A foreign-key extractor: a JSON EXPR of the left value (``$key`` is refused, as Kafka 3.9's
    ``Function<V, KO>``) or a Python callable ``value -> foreign key``."""
    if extractor is None:
        raise TypeError("foreignKeyExtractor can't be null")
    if callable(extractor) and not isinstance(extractor, (str, dict)):
        return GraphArg(EXPR_PLACEHOLDER, {"foreign_key": _value_mapper(extractor)}, (extractor,))
    arg = expr_arg(extractor, where, "foreignKeyExtractor")
    return GraphArg(arg.json)


def graph_joiner_arg(joiner) -> GraphArg:
    """A graph join's joiner fields: ``pair`` / ``concat`` (a name or a :class:`ValueJoiner`) or a
    Python callable ``(left, right) -> value``."""
    fields = joiner_fields(joiner)
    if callable(fields["joiner"]):
        return GraphArg({"joiner": "pair"}, {"joiner": fields["joiner"]}, (fields["joiner"],))
    obj = {"joiner": fields["joiner"]}
    if fields["joiner_separator"] != "+":
        obj["joiner_separator"] = fields["joiner_separator"]
    return GraphArg(obj)


def join_window_json(windows: JoinWindows) -> dict:
    """A stream-stream join's ``window`` and ``window_api`` fields."""
    return {"window": {"before_ms": windows.before_ms, "after_ms": windows.after_ms, "grace_ms": windows.grace_ms},
            "window_api": windows.window_api}


def windowed_by_json(windows, emit: str) -> dict:
    """``windowed_by``'s argument for ``TimeWindows``, ``SlidingWindows`` or ``SessionWindows``."""
    if isinstance(windows, TimeWindows):
        obj = {"time": {"size_ms": windows.size_ms, "advance_ms": windows.advance_ms, "grace_ms": windows.grace_ms}}
    elif isinstance(windows, SlidingWindows):
        obj = {"sliding": {"time_difference_ms": windows.time_difference_ms, "grace_ms": windows.grace_ms}}
    else:
        obj = {"session": {"gap_ms": windows.gap_ms, "grace_ms": windows.grace_ms}}
    if emit != "on_update":
        obj["emit"] = emit
    return obj


def suppress_json(spec: SuppressSpec) -> dict:
    """The suppress object of a :class:`SuppressSpec` (format 1's, which graphs share)."""
    out = {"until": spec.until}
    if spec.time_limit_ms is not None:
        out["time_limit_ms"] = spec.time_limit_ms
    if spec.buffer != SuppressBufferSpec():
        buffer = {name: getattr(spec.buffer, name) for name in ("max_records", "max_bytes")
                  if getattr(spec.buffer, name) is not None}
        buffer["when_full"] = spec.buffer.when_full
        out["buffer"] = buffer
    return out


def graph_aggregation_arg(method: str, initializer, aggregator, names, reduce: bool) -> tuple:
    """``(operation, GraphArg)`` of ``count`` / ``reduce`` / ``aggregate`` in a graph: a named
    function of the graph spec (``names``), an :class:`Aggregation`, or Python callables
    (``initializer`` + ``aggregator``; ``reduce``: ``initializer`` is the reducer)."""
    from kssim.reference.model.aggregations import Aggregation

    if isinstance(initializer, str):
        if aggregator is not None:
            raise TypeError(f"a named {method} brings its own functions; give either a name or callables")
        if initializer not in names:
            raise IllegalArgumentError(f"unknown {'reducer' if reduce else 'aggregation'} {initializer!r}: "
                                       f"{method}() of a graph takes the named functions {', '.join(names)}, "
                                       "an Aggregation or Python callables")
        return method, GraphArg(initializer)
    if isinstance(initializer, Aggregation):
        if aggregator is not None:
            raise TypeError("an Aggregation brings its own functions; give either it or callables")
        if initializer.is_reduce != reduce:
            raise TypeError(f"{method} takes an Aggregation {'without' if reduce else 'with'} initializer, "
                            f"got {initializer.name!r}")
        aggregation = initializer
    elif reduce:
        _require_callable(initializer, "reducer", "(aggregate, value) -> aggregate")
        aggregation = aggregation_from_callables(reducer=initializer, name=_callable_name(initializer))
    else:
        _require_callable(initializer, "initializer", "() -> aggregate")
        _require_callable(aggregator, "aggregator", "(key, value, aggregate) -> aggregate")
        aggregation = aggregation_from_callables(initializer, aggregator, name=_callable_name(aggregator))
    placeholder = "sum" if reduce else "count"
    users = tuple(f for f in (initializer, aggregator) if f is not None)
    return method, GraphArg(placeholder, {"function": aggregation}, users)


def graph_subtractor(subtractor, reduce: bool):
    """A grouped table's Python subtractor as the engine calls it, ``(key, aggregate, value) ->
    aggregate``: Kafka's ``Reducer`` ``(aggregate, value)`` for ``reduce``, its ``Aggregator``
    ``(key, value, aggregate)`` (the group's key) for ``aggregate``."""
    if reduce:
        _require_callable(subtractor, "subtractor", "(aggregate, value) -> aggregate")
        return _named_like(lambda key, aggregate, value: subtractor(aggregate, value), subtractor)
    _require_callable(subtractor, "subtractor", "(key, value, aggregate) -> aggregate")
    return _named_like(lambda key, aggregate, value: subtractor(key, value, aggregate), subtractor)
