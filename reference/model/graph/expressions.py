"""The closed expression (EXPR) and predicate (PRED) language of topology graphs, and the JSON
rules it rests on (``../shared/spec/topology-graphs.md``: "Expressions", "Predicates", "Keys,
values and their bytes").

What lives here:

- one frozen class per form: :class:`KeyRef` (``"$key"``), :class:`ValueRef` (``"$value"``),
  :class:`Field`, :class:`KeyField`, :class:`Const`, :class:`Concat`, :class:`ObjectExpr`,
  :class:`ListExpr`, :class:`Add`, :class:`Mod`; :class:`Cmp`, :class:`IsNull`, :class:`Not`,
  :class:`And`, :class:`Or`;
- :func:`parse_expr` / :func:`parse_pred` (JSON to form, every malformed form an error naming its
  exact path), :func:`expr_to_json` / :func:`pred_to_json` (back), :func:`reads_key`;
- :func:`compile_expr` / :func:`compile_pred`: one closure per node, built once. Evaluating is a
  call per node and no type dispatch on the form (the forms are resolved when compiling), so a
  ``{"field": ...}`` costs one dict lookup and a ``cmp`` of two ints a few comparisons;
- the JSON value rules every engine shares: :func:`text` (TEXT, Java's ``String.valueOf`` of
  the Jackson node), :func:`serialize` (the bytes of Jackson's compact writer: key identity and
  store order), :func:`json_equal`, :func:`utf16_compare` (Java ``String#compareTo``),
  :func:`is_integer` and :func:`wrap_long` (integers are Java longs), :func:`java_double`
  (``Double.toString``, for the floats data may carry).

Costs on hot paths: :func:`text` of a string is the string itself (no copy); of an object or a
list, one pass over it. :func:`serialize` of a string without characters to escape is one regex
scan plus the UTF-8 encode; escapes go through a regex substitution (C loop, a Python call per
escaped character only). :func:`json_equal` returns at the first difference.

Values are JSON as Python holds it (``None``, ``bool``, ``int``, ``float``, ``str``, ``list``,
``dict`` in member order) and are never mutated here: an ``object``/``list`` expression puts the
record's own values in its result without copying them, and a ``const`` hands out the same
object on every call, so consumers must not mutate what they get (the project's rule for values).
"""
from __future__ import annotations

import math
import operator
import re
from decimal import Decimal
from typing import Callable, Union

import attrs

#: the Java ``long`` range: integers outside it are not integers for graphs (spec, "Integers")
LONG_MIN = -(1 << 63)
LONG_MAX = (1 << 63) - 1
_LONG_SPAN = 1 << 64

EXPR_FORMS = ("field", "key_field", "const", "concat", "object", "list", "add", "mod")
PRED_FORMS = ("cmp", "is_null", "not", "and", "or")
CMP_OPS = ("==", "!=", "<", "<=", ">", ">=")

_EXPR_HELP = ('an expression is "$key", "$value" or an object with exactly one of the fields '
              + ", ".join(EXPR_FORMS))
_PRED_HELP = "a predicate is an object with exactly one of the fields " + ", ".join(PRED_FORMS)


# ---------------------------------------------------------------------------------------------
# integers, TEXT, bytes, equality, order


def is_integer(value) -> bool:
    """Whether ``value`` is an integer of the spec: a JSON integer within the Java ``long``
    range. ``bool`` is not (Python's ``True == 1`` must not leak into Kafka's arithmetic); a
    float is not, even ``1.0`` (Jackson reads it as a ``DoubleNode``)."""
    return value.__class__ is int and LONG_MIN <= value <= LONG_MAX


def wrap_long(x: int) -> int:
    """``x`` as a Java ``long`` computes it: 64-bit two's complement, wrapping on overflow."""
    if LONG_MIN <= x <= LONG_MAX:
        return x
    return (x - LONG_MIN) % _LONG_SPAN + LONG_MIN


def java_double(x: float) -> str:
    """Java's ``Double.toString(x)``, which Jackson uses for a ``DoubleNode`` in TEXT and bytes:
    plain notation with at least one fraction digit for 1e-3 <= |x| < 1e7, otherwise
    ``d.dddE<exp>``. The digits are the shortest that read back as ``x`` (Python's ``repr``,
    which is what Java 19+ prints; Java 17 prints a longer form for a few rare values)."""
    if x != x:
        return "NaN"
    if x in (math.inf, -math.inf):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    sign, digit_tuple, exponent = Decimal(repr(x)).as_tuple()
    digits = "".join(map(str, digit_tuple)).rstrip("0")
    exponent += len(digit_tuple) - 1  # the power of ten of the first digit
    if len(digits) == 1:
        # Java never stops at one digit: it takes the 2-digit decimal nearest to x that still
        # reads back as x (Double.MIN_VALUE is 4.9E-324, not 5.0E-324)
        mantissa, _, two_exponent = f"{abs(x):.1e}".partition("e")
        if float(f"{mantissa}e{two_exponent}") == abs(x):
            digits, exponent = mantissa.replace(".", "").rstrip("0"), int(two_exponent)
    prefix = "-" if sign else ""
    if -3 <= exponent < 7:
        if exponent >= 0:
            whole = digits[:exponent + 1].ljust(exponent + 1, "0")
            return f"{prefix}{whole}.{digits[exponent + 1:] or '0'}"
        return f"{prefix}0.{'0' * (-exponent - 1)}{digits}"
    return f"{prefix}{digits[0]}.{digits[1:] or '0'}E{exponent}"


# The escapes of Jackson's writers: '"', '\' and control characters (named ones short, the rest
# \u00XX upper-case); DEL (U+007F) and every other character are written as they are.
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}
for _code in range(0x20):
    _ESCAPES.setdefault(chr(_code), f"\\u{_code:04X}")
del _code
_TEXT_SPECIAL = re.compile('["\\\\\x00-\x1f]')
# Jackson's UTF-8 writer (``writeValueAsBytes``: what a JSON serde uses) also escapes every UTF-16
# surrogate it meets as \uXXXX (UTF8JsonGenerator#_outputMultiByteChar; jackson-core 2.16, as
# Kafka 3.9 ships it, has no switch for it): a character beyond U+FFFF becomes its two escaped
# surrogates, a lone surrogate its own escape. Its String writer (``JsonNode#toString``, TEXT)
# writes them as they are.
_BYTES_SPECIAL = re.compile('["\\\\\x00-\x1f\ud800-\udfff\U00010000-\U0010ffff]')


def _escape_char(match) -> str:
    char = match.group()
    escape = _ESCAPES.get(char)
    if escape is not None:
        return escape
    code = ord(char)
    if code >= 0x10000:
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04X}\\u{0xDC00 + (code & 0x3FF):04X}"
    return f"\\u{code:04X}"


def _quote_text(s: str) -> str:
    """A JSON string as Jackson's String writer writes it (TEXT of objects and lists)."""
    if _TEXT_SPECIAL.search(s) is None:
        return '"' + s + '"'
    return '"' + _TEXT_SPECIAL.sub(_escape_char, s) + '"'


def _quote_bytes(s: str) -> str:
    """A JSON string as Jackson's UTF-8 writer writes it (serialized keys and values); the
    result has no surrogates left, so it always encodes to UTF-8."""
    if _BYTES_SPECIAL.search(s) is None:
        return '"' + s + '"'
    return '"' + _BYTES_SPECIAL.sub(_escape_char, s) + '"'


def _dump(value, quote) -> str:
    """Compact JSON of ``value``, members in order, strings through ``quote``."""
    kind = value.__class__
    if kind is str:
        return quote(value)
    if value is None:
        return "null"
    if kind is bool:
        return "true" if value else "false"
    if kind is int:
        return int.__repr__(value)
    if kind is float:
        return java_double(value)
    if kind is dict:
        return "{" + ",".join([quote(name) + ":" + _dump(member, quote) for name, member in value.items()]) + "}"
    if kind is list:
        return "[" + ",".join([_dump(element, quote) for element in value]) + "]"
    raise TypeError(f"not a JSON value: {value!r}")


def text(value) -> str:
    """TEXT of a value (spec, "Expressions"): Java ``String.valueOf`` of the Jackson node, with a
    string's own characters: null → ``null``, integers in decimal, ``true``/``false``, objects
    and lists as compact JSON (``JsonNode#toString``: characters beyond U+FFFF as they are)."""
    kind = value.__class__
    if kind is str:
        return value
    if value is None:
        return "null"
    if kind is bool:
        return "true" if value else "false"
    if kind is int:
        return int.__repr__(value)
    if kind is float:
        return java_double(value)
    return _dump(value, _quote_text)


def serialize(value):
    """The bytes of the graphs' one JSON serde (Jackson's ``writeValueAsBytes``) for ``value``;
    None for null (no bytes). Two keys are one key iff these bytes are equal, and stores order
    entries by them (spec, "Keys, values and their bytes")."""
    if value is None:
        return None
    if value.__class__ is str:
        return _quote_bytes(value).encode("utf-8")
    return _dump(value, _quote_bytes).encode("utf-8")


def json_equal(a, b) -> bool:
    """JSON equality (spec, "Predicates"): same type and value; integers by value (``True`` is
    not ``1``, ``1.0`` is not ``1``); objects with the same member names and equal members in any
    order; lists element by element. Floats as Jackson's ``DoubleNode#equals``
    (``Double.compare``): ``-0.0`` is not ``0.0``."""
    kind = a.__class__
    if kind is not b.__class__:
        return False
    if kind is dict:
        if len(a) != len(b):
            return False
        for name, member in a.items():
            other = b.get(name, _MISSING)
            if other is _MISSING or not json_equal(member, other):
                return False
        return True
    if kind is list:
        return len(a) == len(b) and all(map(json_equal, a, b))
    if kind is float:
        if a != b:
            return a != a and b != b  # NaN equals NaN for Double.compare (the loader rejects NaN anyway)
        return a != 0.0 or math.copysign(1.0, a) == math.copysign(1.0, b)
    return a == b


_MISSING = object()


def _utf16(s: str) -> bytes:
    # big-endian 16-bit units compare bytewise exactly as Java compares chars; lone surrogates
    # are units of their own, as in a Java String
    return s.encode("utf-16-be", "surrogatepass")


def utf16_compare(a: str, b: str) -> int:
    """Java's ``a.compareTo(b)`` sign (-1, 0, 1): strings ordered by UTF-16 code units, which
    puts U+10000.. (surrogates D800-DFFF) before U+E000..U+FFFF, unlike Python's code points."""
    if not (a.isascii() and b.isascii()):
        a, b = _utf16(a), _utf16(b)
    return (a > b) - (a < b)


# ---------------------------------------------------------------------------------------------
# the forms


def _as_tuple(items) -> tuple:
    return tuple(items)


def _as_members(members) -> tuple:
    pairs = members.items() if isinstance(members, dict) else members
    return tuple((name, expr) for name, expr in pairs)


def _const_identity(value) -> str:
    # equal exactly when the JSON values are the same, types and member order included
    return _dump(value, _quote_bytes)


@attrs.frozen
class KeyRef:
    """``"$key"``: the record's key (a windowed key as ``{"key", "start", "end"}``)."""


@attrs.frozen
class ValueRef:
    """``"$value"``: the record's value."""


@attrs.frozen
class Field:
    """``{"field": NAME}``: a member of the value; null unless the value is an object holding it."""

    name: str


@attrs.frozen
class KeyField:
    """``{"key_field": NAME}``: a member of the key, as :class:`Field` on the value."""

    name: str


@attrs.frozen
class Const:
    """``{"const": JSON}``. The JSON value is kept as given (lists and dicts are not hashable);
    equality and hashing go through its canonical text, which tells ``1``, ``1.0``, ``true`` and
    ``"1"`` apart and keeps member order, as Kafka's bytes do."""

    value: object = attrs.field(eq=False, hash=False)
    _identity: str = attrs.field(init=False, repr=False,
                                 default=attrs.Factory(lambda self: _const_identity(self.value), takes_self=True))


@attrs.frozen
class Concat:
    """``{"concat": [EXPR, ...]}``: the TEXT of each part, concatenated."""

    parts: tuple = attrs.field(converter=_as_tuple)


@attrs.frozen
class ObjectExpr:
    """``{"object": {NAME: EXPR, ...}}``: ``members`` is a tuple of ``(name, expr)`` in order."""

    members: tuple = attrs.field(converter=_as_members)


@attrs.frozen
class ListExpr:
    """``{"list": [EXPR, ...]}``."""

    parts: tuple = attrs.field(converter=_as_tuple)


@attrs.frozen
class Add:
    """``{"add": [EXPR, EXPR]}``: Java ``long`` addition; null unless both are integers."""

    left: object
    right: object


@attrs.frozen
class Mod:
    """``{"mod": [EXPR, INT]}``: ``Math.floorMod(x, divisor)``; null unless x is an integer."""

    expr: object
    divisor: int


@attrs.frozen
class Cmp:
    """``{"cmp": [EXPR, OP, EXPR]}``."""

    left: object
    op: str
    right: object


@attrs.frozen
class IsNull:
    """``{"is_null": EXPR}``."""

    expr: object


@attrs.frozen
class Not:
    """``{"not": PRED}``."""

    pred: object


@attrs.frozen
class And:
    """``{"and": [PRED, ...]}``: true when all are (``[]``: true)."""

    preds: tuple = attrs.field(converter=_as_tuple)


@attrs.frozen
class Or:
    """``{"or": [PRED, ...]}``: true when one is (``[]``: false)."""

    preds: tuple = attrs.field(converter=_as_tuple)


Expr = Union[KeyRef, ValueRef, Field, KeyField, Const, Concat, ObjectExpr, ListExpr, Add, Mod]
Pred = Union[Cmp, IsNull, Not, And, Or]


# ---------------------------------------------------------------------------------------------
# parsing


def _describe(obj) -> str:
    """How an error names a JSON value the user wrote."""
    if obj is None:
        return "null"
    if isinstance(obj, bool):
        return "true" if obj else "false"
    if isinstance(obj, (int, float)):
        return f"the number {obj!r}"
    if isinstance(obj, str):
        return f"the string {obj!r}"
    if isinstance(obj, list):
        return "a list"
    if isinstance(obj, dict):
        return "an object"
    return repr(obj)


def _single_form(obj: dict, where: str, fail, forms, other_forms, help_text, other_kind) -> str:
    """The one form field of ``obj``, or the error: an unknown field (naming it), none, several."""
    for name in obj:
        if name in forms:
            continue
        if name in other_forms:
            raise fail(f"{where}.{name}", f"{name} is a form of {other_kind}, not allowed here; {help_text}")
        raise fail(f"{where}.{name}", f"unknown field; {help_text}")
    if not obj:
        raise fail(where, f"an empty object is not allowed; {help_text}")
    if len(obj) > 1:
        raise fail(where, f"has several forms ({', '.join(obj)}), exactly one is allowed; {help_text}")
    return next(iter(obj))


def parse_expr(obj, where: str, fail: Callable[[str, str], Exception]):
    """The :data:`Expr` that the JSON ``obj`` at path ``where`` writes; ``fail(where, message)``
    builds the exception to raise for a malformed one (at the exact path of the fault)."""
    if isinstance(obj, str):
        if obj == "$key":
            return KeyRef()
        if obj == "$value":
            return ValueRef()
        raise fail(where, f"a bare string must be \"$key\" or \"$value\", got {obj!r} "
                          f"(write a constant string as {{\"const\": ...}})")
    if not isinstance(obj, dict):
        raise fail(where, f"{_describe(obj)} is not an expression (write constants as "
                          f"{{\"const\": ...}}); {_EXPR_HELP}")
    form = _single_form(obj, where, fail, EXPR_FORMS, PRED_FORMS, _EXPR_HELP, "predicates (PRED)")
    return _EXPR_PARSERS[form](obj[form], f"{where}.{form}", fail)


def _parse_name(form_class):
    def parse(arg, where, fail):
        if not isinstance(arg, str):
            raise fail(where, f"must be a string (a member name), got {_describe(arg)}")
        return form_class(arg)
    return parse


def _check_json(value, where: str, fail) -> None:
    """A ``const`` holds JSON only (what a scenario file can hold; the Python API could pass
    anything)."""
    kind = value.__class__
    if value is None or kind in (bool, int, str):
        return
    if kind is float:
        if math.isnan(value) or math.isinf(value):
            raise fail(where, f"{value!r} is not a JSON number")
        return
    if kind is list:
        for index, element in enumerate(value):
            _check_json(element, f"{where}[{index}]", fail)
        return
    if kind is dict:
        for name, member in value.items():
            if name.__class__ is not str:
                raise fail(where, f"an object's member names are strings, got {name!r}")
            _check_json(member, f"{where}.{name}", fail)
        return
    raise fail(where, f"not a JSON value: {value!r}")


def _parse_const(arg, where, fail):
    _check_json(arg, where, fail)
    return Const(arg)


def _parse_expr_list(arg, where, fail, what) -> tuple:
    if not isinstance(arg, list):
        raise fail(where, f"must be a list of {what}, got {_describe(arg)}")
    return tuple(parse_expr(part, f"{where}[{index}]", fail) for index, part in enumerate(arg))


def _parse_concat(arg, where, fail):
    return Concat(_parse_expr_list(arg, where, fail, "expressions"))


def _parse_list(arg, where, fail):
    return ListExpr(_parse_expr_list(arg, where, fail, "expressions"))


def _parse_object(arg, where, fail):
    if not isinstance(arg, dict):
        raise fail(where, f"must be an object of NAME: EXPR members, got {_describe(arg)}")
    return ObjectExpr(tuple((name, parse_expr(member, f"{where}.{name}", fail)) for name, member in arg.items()))


def _parse_add(arg, where, fail):
    if not isinstance(arg, list) or len(arg) != 2:
        raise fail(where, f"must be a list of two expressions [EXPR, EXPR], got {_shape(arg)}")
    return Add(parse_expr(arg[0], f"{where}[0]", fail), parse_expr(arg[1], f"{where}[1]", fail))


def _parse_mod(arg, where, fail):
    if not isinstance(arg, list) or len(arg) != 2:
        raise fail(where, f"must be [EXPR, INT] (INT a non-zero integer), got {_shape(arg)}")
    dividend = parse_expr(arg[0], f"{where}[0]", fail)
    divisor = arg[1]
    if divisor.__class__ is not int:
        raise fail(f"{where}[1]", f"must be a non-zero integer literal (a JSON integer, not an expression), "
                                  f"got {_describe(divisor)}")
    if divisor == 0:
        raise fail(f"{where}[1]", "must not be 0 (Math.floorMod by zero throws ArithmeticException)")
    if not LONG_MIN <= divisor <= LONG_MAX:
        raise fail(f"{where}[1]", f"{divisor} does not fit in a Java long (64 bits, at most {LONG_MAX})")
    return Mod(dividend, divisor)


def _shape(arg) -> str:
    if isinstance(arg, list):
        return f"a list of {len(arg)}"
    return _describe(arg)


_EXPR_PARSERS = {
    "field": _parse_name(Field),
    "key_field": _parse_name(KeyField),
    "const": _parse_const,
    "concat": _parse_concat,
    "object": _parse_object,
    "list": _parse_list,
    "add": _parse_add,
    "mod": _parse_mod,
}


def parse_pred(obj, where: str, fail: Callable[[str, str], Exception]):
    """The :data:`Pred` that the JSON ``obj`` at path ``where`` writes (errors as
    :func:`parse_expr`)."""
    if not isinstance(obj, dict):
        hint = ' (for a constant, write {"and": []} for true, {"or": []} for false)' if isinstance(obj, bool) else ""
        raise fail(where, f"{_describe(obj)} is not a predicate{hint}; {_PRED_HELP}")
    form = _single_form(obj, where, fail, PRED_FORMS, EXPR_FORMS, _PRED_HELP, "expressions (EXPR)")
    return _PRED_PARSERS[form](obj[form], f"{where}.{form}", fail)


def _parse_cmp(arg, where, fail):
    if not isinstance(arg, list) or len(arg) != 3:
        raise fail(where, f"must be [EXPR, OP, EXPR] with OP one of {', '.join(CMP_OPS)}, got {_shape(arg)}")
    left = parse_expr(arg[0], f"{where}[0]", fail)
    op = arg[1]
    if not isinstance(op, str) or op not in CMP_OPS:
        raise fail(f"{where}[1]", f"must be one of {', '.join(CMP_OPS)}, got {_describe(op)}")
    return Cmp(left, op, parse_expr(arg[2], f"{where}[2]", fail))


def _parse_pred_list(arg, where, fail) -> tuple:
    if not isinstance(arg, list):
        raise fail(where, f"must be a list of predicates, got {_describe(arg)}")
    return tuple(parse_pred(part, f"{where}[{index}]", fail) for index, part in enumerate(arg))


_PRED_PARSERS = {
    "cmp": _parse_cmp,
    "is_null": lambda arg, where, fail: IsNull(parse_expr(arg, where, fail)),
    "not": lambda arg, where, fail: Not(parse_pred(arg, where, fail)),
    "and": lambda arg, where, fail: And(_parse_pred_list(arg, where, fail)),
    "or": lambda arg, where, fail: Or(_parse_pred_list(arg, where, fail)),
}


# ---------------------------------------------------------------------------------------------
# back to JSON, and what an expression reads
#
# One function per class in a table keyed by the class: the forms stay plain data classes and
# the three walks (JSON, reads_key, compile) each read as one block.


_TO_JSON = {
    KeyRef: lambda e: "$key",
    ValueRef: lambda e: "$value",
    Field: lambda e: {"field": e.name},
    KeyField: lambda e: {"key_field": e.name},
    Const: lambda e: {"const": e.value},
    Concat: lambda e: {"concat": [expr_to_json(p) for p in e.parts]},
    ObjectExpr: lambda e: {"object": {name: expr_to_json(m) for name, m in e.members}},
    ListExpr: lambda e: {"list": [expr_to_json(p) for p in e.parts]},
    Add: lambda e: {"add": [expr_to_json(e.left), expr_to_json(e.right)]},
    Mod: lambda e: {"mod": [expr_to_json(e.expr), e.divisor]},
    Cmp: lambda p: {"cmp": [expr_to_json(p.left), p.op, expr_to_json(p.right)]},
    IsNull: lambda p: {"is_null": expr_to_json(p.expr)},
    Not: lambda p: {"not": pred_to_json(p.pred)},
    And: lambda p: {"and": [pred_to_json(q) for q in p.preds]},
    Or: lambda p: {"or": [pred_to_json(q) for q in p.preds]},
}

_EXPR_CLASSES = (KeyRef, ValueRef, Field, KeyField, Const, Concat, ObjectExpr, ListExpr, Add, Mod)
_PRED_CLASSES = (Cmp, IsNull, Not, And, Or)


def expr_to_json(expr):
    """The JSON form of an expression (``parse_expr(expr_to_json(e), ...) == e``)."""
    if expr.__class__ not in _EXPR_CLASSES:
        raise TypeError(f"not an expression: {expr!r}")
    return _TO_JSON[expr.__class__](expr)


def pred_to_json(pred):
    """The JSON form of a predicate (``parse_pred(pred_to_json(p), ...) == p``)."""
    if pred.__class__ not in _PRED_CLASSES:
        raise TypeError(f"not a predicate: {pred!r}")
    return _TO_JSON[pred.__class__](pred)


def _children(node) -> tuple:
    kind = node.__class__
    if kind in (Concat, ListExpr):
        return node.parts
    if kind is ObjectExpr:
        return tuple(member for _, member in node.members)
    if kind in (Add, Cmp):
        return (node.left, node.right)
    if kind in (Mod, IsNull):
        return (node.expr,)
    if kind is Not:
        return (node.pred,)
    if kind in (And, Or):
        return node.preds
    return ()


def reads_key(node) -> bool:
    """Whether an expression or predicate uses the key (``"$key"`` or ``key_field``) anywhere:
    Kafka 3.9's foreign-key extractor is a ``Function<V, KO>`` and cannot."""
    if node.__class__ in (KeyRef, KeyField):
        return True
    return any(reads_key(child) for child in _children(node))


# ---------------------------------------------------------------------------------------------
# compiling


def compile_expr(expr) -> Callable[[object, object], object]:
    """A function ``(key, value) -> JSON value or None`` evaluating ``expr`` (built once, see the
    module docstring for the cost). A Python callable ``(key, value) -> value`` (a graph built by
    the Python API, :mod:`reference.api`) is already that function and is returned as is."""
    compiler = _EXPR_COMPILERS.get(expr.__class__)
    if compiler is None:
        if callable(expr):
            return expr
        raise TypeError(f"not an expression: {expr!r}")
    return compiler(expr)


def compile_pred(pred) -> Callable[[object, object], bool]:
    """A function ``(key, value) -> bool`` evaluating ``pred``; a Python callable (the Python
    API's predicates) is returned as is."""
    compiler = _PRED_COMPILERS.get(pred.__class__)
    if compiler is None:
        if callable(pred):
            return pred
        raise TypeError(f"not a predicate: {pred!r}")
    return compiler(pred)


def _key(key, value):
    return key


def _value(key, value):
    return value


def _compile_field(expr):
    name = expr.name

    def field(key, value):
        return value.get(name) if value.__class__ is dict else None
    return field


def _compile_key_field(expr):
    name = expr.name

    def key_field(key, value):
        return key.get(name) if key.__class__ is dict else None
    return key_field


def _compile_const(expr):
    constant = expr.value
    return lambda key, value: constant


def _text_of(fn):
    """``fn`` followed by TEXT, skipping the call for strings (the common case)."""
    def part(key, value):
        result = fn(key, value)
        return result if result.__class__ is str else text(result)
    return part


def _text_part(expr):
    if expr.__class__ is Const:  # separators and labels: their TEXT once, not per record
        constant = text(expr.value)
        return lambda key, value: constant
    return _text_of(compile_expr(expr))


def _compile_concat(expr):
    parts = tuple(_text_part(p) for p in expr.parts)
    if len(parts) == 2:
        first, second = parts
        return lambda key, value: first(key, value) + second(key, value)
    return lambda key, value: "".join([part(key, value) for part in parts])


def _compile_object(expr):
    members = tuple((name, compile_expr(m)) for name, m in expr.members)
    return lambda key, value: {name: member(key, value) for name, member in members}


def _compile_list(expr):
    parts = tuple(compile_expr(p) for p in expr.parts)
    return lambda key, value: [part(key, value) for part in parts]


def _compile_add(expr):
    left, right = compile_expr(expr.left), compile_expr(expr.right)

    def add(key, value):
        a = left(key, value)
        if a.__class__ is not int or not LONG_MIN <= a <= LONG_MAX:
            return None
        b = right(key, value)
        if b.__class__ is not int or not LONG_MIN <= b <= LONG_MAX:
            return None
        total = a + b
        return total if LONG_MIN <= total <= LONG_MAX else (total - LONG_MIN) % _LONG_SPAN + LONG_MIN
    return add


def _compile_mod(expr):
    inner, divisor = compile_expr(expr.expr), expr.divisor

    def mod(key, value):
        x = inner(key, value)
        if x.__class__ is not int or not LONG_MIN <= x <= LONG_MAX:
            return None
        return x % divisor  # Python's % is floorMod: the result has the divisor's sign
    return mod


_EXPR_COMPILERS = {
    KeyRef: lambda e: _key,
    ValueRef: lambda e: _value,
    Field: _compile_field,
    KeyField: _compile_key_field,
    Const: _compile_const,
    Concat: _compile_concat,
    ObjectExpr: _compile_object,
    ListExpr: _compile_list,
    Add: _compile_add,
    Mod: _compile_mod,
}

_ORDER = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}


def _compile_cmp(pred):
    left, right, op = compile_expr(pred.left), compile_expr(pred.right), pred.op
    if op == "==":
        def equal(key, value):
            a, b = left(key, value), right(key, value)
            if a is None or b is None:
                return a is b
            return json_equal(a, b)
        return equal
    if op == "!=":
        def not_equal(key, value):
            a, b = left(key, value), right(key, value)
            if a is None or b is None:
                return a is not b
            return not json_equal(a, b)
        return not_equal
    compare = _ORDER[op]

    def ordered(key, value):
        # null, and any pair but two integers or two strings, is false
        a, b = left(key, value), right(key, value)
        kind = a.__class__
        if kind is not b.__class__:
            return False
        if kind is int:
            return LONG_MIN <= a <= LONG_MAX and LONG_MIN <= b <= LONG_MAX and compare(a, b)
        if kind is str:
            if a.isascii() and b.isascii():
                return compare(a, b)
            return compare(_utf16(a), _utf16(b))
        return False
    return ordered


def _compile_is_null(pred):
    inner = compile_expr(pred.expr)
    return lambda key, value: inner(key, value) is None


def _compile_not(pred):
    inner = compile_pred(pred.pred)
    return lambda key, value: not inner(key, value)


def _compile_and(pred):
    preds = tuple(compile_pred(p) for p in pred.preds)
    if not preds:
        return lambda key, value: True
    if len(preds) == 1:
        return preds[0]
    if len(preds) == 2:
        first, second = preds
        return lambda key, value: first(key, value) and second(key, value)

    def all_of(key, value):
        for p in preds:
            if not p(key, value):
                return False
        return True
    return all_of


def _compile_or(pred):
    preds = tuple(compile_pred(p) for p in pred.preds)
    if not preds:
        return lambda key, value: False
    if len(preds) == 1:
        return preds[0]
    if len(preds) == 2:
        first, second = preds
        return lambda key, value: first(key, value) or second(key, value)

    def any_of(key, value):
        for p in preds:
            if p(key, value):
                return True
        return False
    return any_of


_PRED_COMPILERS = {
    Cmp: _compile_cmp,
    IsNull: _compile_is_null,
    Not: _compile_not,
    And: _compile_and,
    Or: _compile_or,
}

__all__ = [
    "LONG_MIN", "LONG_MAX", "EXPR_FORMS", "PRED_FORMS", "CMP_OPS",
    "KeyRef", "ValueRef", "Field", "KeyField", "Const", "Concat", "ObjectExpr", "ListExpr", "Add", "Mod",
    "Cmp", "IsNull", "Not", "And", "Or", "Expr", "Pred",
    "parse_expr", "parse_pred", "expr_to_json", "pred_to_json", "reads_key", "compile_expr", "compile_pred",
    "text", "serialize", "json_equal", "utf16_compare", "is_integer", "wrap_long", "java_double",
]
