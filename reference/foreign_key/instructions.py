"""What travels through a foreign-key join's internal topics (``SubscriptionWrapper``,
``SubscriptionResponseWrapper``), the instructions a subscription carries, and the topics.

The subscription topic (Kafka: ``...-SUBSCRIPTION-REGISTRATION-<n>-topic``) is keyed by the FK and
read by the foreign table's tasks; the response topic (``...-SUBSCRIPTION-RESPONSE-<n>-topic``) is
keyed by the LHS primary key and read by the LHS tasks. kssim passes the wrappers as objects (no
wire format); ``trace`` carries the explanation hops and is None unless the run explains.
"""
from __future__ import annotations

import enum

#: the internal topic of subscriptions (key: FK), co-partitioned with the foreign (right) table
SUBSCRIPTION_TOPIC = "fk-subscription-registration"
#: the internal topic of responses (key: LHS PK), co-partitioned with the primary (left) table
RESPONSE_TOPIC = "fk-subscription-response"


class Instruction(enum.Enum):
    """``SubscriptionWrapper.Instruction``: what the foreign side does with a subscription
    (values are Kafka's wire bytes)."""

    #: unsubscribe (pk, fk) and answer nothing: the old FK of an FK change, whose new FK's
    #: subscription answers instead
    DELETE_KEY_NO_PROPAGATE = 0
    #: unsubscribe (pk, fk) and answer with a null foreign value: an LHS delete (or, in the 3.7-4.0
    #: left join, the old FK of any FK change), which retracts or nulls the result
    DELETE_KEY_AND_PROPAGATE = 1
    #: subscribe (pk, fk) and always answer: the foreign value, or null when the FK has no row
    #: (an FK change must "unset" the previous result; the left join's every subscription)
    PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE = 2
    #: subscribe (pk, fk) and answer only when the FK has a row: a new LHS row of an inner join
    #: (and, 4.1+, an inner update that keeps its FK), where no previous result needs unsetting
    PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE = 3


DELETE_KEY_NO_PROPAGATE = Instruction.DELETE_KEY_NO_PROPAGATE
DELETE_KEY_AND_PROPAGATE = Instruction.DELETE_KEY_AND_PROPAGATE
PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE = Instruction.PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE
PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE = Instruction.PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE


class Subscription:
    """``SubscriptionWrapper``: the hash of the LHS value that sent it (None for an LHS delete),
    the instruction, the LHS primary key (and its identity) and ``primary_partition``, the LHS
    task's partition (wrapper v1, 3.3+; kept in every release, used only where routed by it)."""

    __slots__ = ("hash", "instruction", "pk", "pk_id", "primary_partition", "trace")

    def __init__(self, value_hash, instruction, pk, pk_id, primary_partition, trace=None):
        self.hash = value_hash
        self.instruction = instruction
        self.pk = pk
        self.pk_id = pk_id
        self.primary_partition = primary_partition
        self.trace = trace


class Response:
    """``SubscriptionResponseWrapper``: the hash the subscription carried and the foreign value
    (None: no RHS row, an RHS delete, or an unsubscribe that propagates)."""

    __slots__ = ("hash", "foreign_value", "pk_id", "trace")

    def __init__(self, value_hash, foreign_value, pk_id, trace=None):
        self.hash = value_hash
        self.foreign_value = foreign_value
        self.pk_id = pk_id
        self.trace = trace
