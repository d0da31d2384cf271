"""The processors of stream nodes (and the base every graph processor shares).

A processor receives records through ``process(key, value, ts, why)`` (binary nodes expose one
such method per port) and hands results to its children with :meth:`Processor.forward`,
depth-first and in the order the children were added, as Kafka's ``ProcessorNode#forward``. On a
stream edge ``value`` is the record's value; on a table edge it is a :class:`Change`. ``why`` is the
explanation of how the record got here (a :class:`~reference.runtime.explain.Why` or None); each
hop adds its own step when explanations are on.

Mappers and predicates are the compiled closures of :mod:`reference.model.graph.expressions`:
``KStream`` operations call them for every record, null keys and values included.
"""
from __future__ import annotations

from typing import NamedTuple

from kssim.reference.model.codes import DropReason
from kssim.reference.runtime.explain import Why, show


class Change(NamedTuple):
    """A table update as Kafka forwards it: the new value, the old one (None unless old values
    are sent) and ``latest`` (False: an out-of-order update of a versioned table, KIP-914)."""

    new: object
    old: object = None
    latest: bool = True


class Processor:
    """A node's processor: its children are the ``process`` methods it forwards to."""

    __slots__ = ("name", "children", "ctx")

    def __init__(self, name: str, ctx):
        self.name = name  # the node's place, "graph[3] filter", for explanations and drops
        self.children: list = []
        self.ctx = ctx

    def forward(self, key, value, ts, why=None):
        for child in self.children:
            child(key, value, ts, why)

    def forward_flushed(self, key, new, old, ts, why):
        """What the record cache of this node's store flushes (:mod:`reference.graph.cache`)."""
        self.forward(key, Change(new, old), ts, why)

    def hop(self, why, rule: str, text: str):
        """``why`` extended by this node's step (only called when explanations are on)."""
        return hop(why, self.name, rule, text)

    def drop(self, reason: DropReason, text: str = "", ref: str = ""):
        ctx = self.ctx
        # the node is named by the drop itself (Drop.node); the text says what happened there
        ctx.drop(reason, Why(reason.code, text, ref=ref) if ctx.explain and text else None, self.name)


def hop(why, node: str, rule: str, text: str) -> Why:
    """A :class:`Why` for a record that went through ``node``: the earlier steps, then this one."""
    step = f"{node}: {text}"
    if why is None:
        return Why(rule, step)
    return Why(why.rule if rule == "pass" else rule, f"{why.text} -> {step}", why.joined, ref=why.ref)


class StreamSource(Processor):
    """``builder.stream(topic)``: every record of the topic, as is."""

    __slots__ = ()

    def process(self, key, value, ts, why=None):
        if self.ctx.explain:
            why = Why("source", f"{self.name} {show(key)}:{show(value)}@{ts}")
        self.forward(key, value, ts, why)


class StreamFilter(Processor):
    __slots__ = ("predicate", "negate")

    def __init__(self, name, ctx, predicate, negate):
        super().__init__(name, ctx)
        self.predicate = predicate
        self.negate = negate

    def process(self, key, value, ts, why=None):
        if self.predicate(key, value) is self.negate:
            self.drop(DropReason.FILTERED, f"{show(key)}:{show(value)}@{ts} did not pass the predicate", "KStreamFilter")
            return
        self.forward(key, value, ts, self.hop(why, "pass", "passed the predicate") if self.ctx.explain else None)


class StreamMapValues(Processor):
    __slots__ = ("mapper",)

    def __init__(self, name, ctx, mapper):
        super().__init__(name, ctx)
        self.mapper = mapper

    def process(self, key, value, ts, why=None):
        mapped = self.mapper(key, value)
        self.forward(key, mapped, ts, self.hop(why, "pass", f"value -> {show(mapped)}") if self.ctx.explain else None)


class SelectKey(Processor):
    """``KStream#selectKey``, and the key selection of ``KStream#groupBy``: a new key, same value."""

    __slots__ = ("mapper",)

    def __init__(self, name, ctx, mapper):
        super().__init__(name, ctx)
        self.mapper = mapper

    def process(self, key, value, ts, why=None):
        new_key = self.mapper(key, value)
        self.forward(new_key, value, ts, self.hop(why, "pass", f"key -> {show(new_key)}") if self.ctx.explain else None)


class StreamMap(Processor):
    __slots__ = ("key_mapper", "value_mapper")

    def __init__(self, name, ctx, key_mapper, value_mapper):
        super().__init__(name, ctx)
        self.key_mapper = key_mapper
        self.value_mapper = value_mapper

    def process(self, key, value, ts, why=None):
        new_key, new_value = self.key_mapper(key, value), self.value_mapper(key, value)
        self.forward(new_key, new_value, ts,
                     self.hop(why, "pass", f"-> {show(new_key)}:{show(new_value)}") if self.ctx.explain else None)


class FlatMapValues(Processor):
    """``KStream#flatMapValues``: a list gives a record per element, null none, anything else one."""

    __slots__ = ("mapper",)

    def __init__(self, name, ctx, mapper):
        super().__init__(name, ctx)
        self.mapper = mapper

    def process(self, key, value, ts, why=None):
        result = self.mapper(key, value)
        if result is None:
            self.drop(DropReason.FILTERED, f"{show(key)}:{show(value)}@{ts} mapped to null: no record",
                      "KStreamFlatMapValues")
            return
        values = result if isinstance(result, list) else (result,)
        explain = self.ctx.explain
        for i, element in enumerate(values):
            self.forward(key, element, ts, self.hop(why, "pass", f"element {i}: {show(element)}") if explain else None)


class PassThrough(Processor):
    """``merge``, ``groupByKey``, ``windowedBy``: records go on unchanged (merge: from both sides)."""

    __slots__ = ()

    def process(self, key, value, ts, why=None):
        self.forward(key, value, ts, why)

    process_other = process  # merge: the other stream enters the same way


class TableToStream(Processor):
    """``KTable#toStream``: each change's new value (a tombstone for a delete)."""

    __slots__ = ()

    def process(self, key, change, ts, why=None):
        self.forward(key, change.new, ts, why)


class RepartitionSink(Processor):
    """The sink of a repartition topic and the filter before it: the record leaves the node and
    comes back through the task's internal queues (:mod:`reference.graph.queues`) after the
    current record is done. ``drops_null_keys``: the filter drops null-key records (the plan's
    :func:`reference.model.graph.plan._drops_null_keys`: KIP-962's rewrite)."""

    __slots__ = ("topic", "drops_null_keys", "relaxed_joins_keep")

    def __init__(self, name, ctx, topic, drops_null_keys: bool, relaxed_joins_keep: bool = True):
        super().__init__(name, ctx)
        self.topic = topic
        self.drops_null_keys = drops_null_keys
        self.relaxed_joins_keep = relaxed_joins_keep  # [repartition_keeps_null_keys_for_relaxed_joins] holds

    def process(self, key, value, ts, why=None):
        if key is None and self.drops_null_keys:
            if self.relaxed_joins_keep:
                rule = "no left or outer join lies downstream (repartition_keeps_null_keys_for_relaxed_joins)"
                ref = "InternalStreamsBuilder#rewriteRepartitionNodes (KIP-962)"
            else:
                rule = "before 3.7 the filter before every repartition topic drops null keys"
                ref = "KStreamImpl#createRepartitionedSource (key != null)"
            self.drop(DropReason.NULL_KEY, f"null:{show(value)}@{ts} has a null key: dropped by the filter before "
                      f"repartition topic {self.topic}: {rule}", ref)
            return
        self.ctx.send_internal(self.topic, key, value, ts,
                               self.hop(why, "pass", "written to this repartition topic, read back when the heap "
                                                     "of internal queues gives it") if self.ctx.explain else None)


class TopicSink(Processor):
    """``KStream#to(topic)``: an output record of the topic."""

    __slots__ = ("topic",)

    def __init__(self, name, ctx, topic):
        super().__init__(name, ctx)
        self.topic = topic

    def process(self, key, value, ts, why=None):
        self.ctx.emit(key, value, ts, why, topic=self.topic)
