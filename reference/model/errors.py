"""Errors kssim reports to its users, each naming where the problem is."""
from kssim.reference.model.codes import FailureCode


class KssimError(Exception):
    """Base class of every error kssim reports in its own words."""


class ScenarioError(KssimError):
    """A scenario file (or an input record in it) is malformed.

    ``path`` names the file, ``where`` the place inside it (``inputs[3].ts``,
    ``topology.window.before_ms``), so a user can go straight to it.
    """

    def __init__(self, path, where, message):
        self.path = str(path) if path is not None else "<scenario>"
        self.where = where
        self.message = message
        loc = f"{self.path}: {where}: " if where else f"{self.path}: "
        super().__init__(loc + message)


class TopologyError(KssimError):
    """A topology that Kafka Streams itself would reject when it is built or initialised."""

    def __init__(self, field, message):
        self.field = field
        self.message = message
        super().__init__(f"{field}: {message}" if field else message)


class ScheduleError(KssimError):
    """An interleaved run's schedule chose a queue that is empty at that step: ``step`` is the
    choice's index, ``where`` its field (``config.schedule[STEP]``)."""

    def __init__(self, step: int, message: str):
        self.step = step
        self.where = f"config.schedule[{step}]"
        self.message = message
        super().__init__(f"{self.where}: {message}")


class UnsupportedOperator(KssimError):
    """The scenario's operator is valid but this engine does not implement it (yet)."""


class KafkaWouldFail(KssimError):
    """Real Kafka Streams dies on this input (e.g. an exception in a processor).

    kssim reports the failure, and at which input, instead of inventing an output. ``code`` is
    the :class:`reference.model.codes.FailureCode` (a closed set, the same for every engine);
    ``message`` is that code's message, which scenario files match with
    ``expected_failure.message_contains``; ``why`` is the engine's explanation with its numbers
    (the reference's ``Why``; None when not asked for, or from engines that do not explain).
    """

    def __init__(self, input_index, code, why=None):
        if not isinstance(code, FailureCode):
            raise TypeError(f"KafkaWouldFail takes a FailureCode, got {code!r}")
        self.input_index = input_index
        self.code = code
        self.message = code.message
        self.why = why
        super().__init__(f"Kafka Streams would fail at input {input_index}: {code.message}")

    def __reduce__(self):
        # pickling (e.g. across processes) rebuilds from the arguments, not from str(self)
        return (type(self), (self.input_index, self.code, self.why))
