"""The expression (EXPR) and predicate (PRED) language of topology graphs as native Spark SQL
(no Python UDF), equal row for row to the shared model's compilation
(:func:`reference.model.graph.expressions.compile_expr` / ``compile_pred``) followed by the UDF
path's writer (:mod:`spark_backend.graph.mappers`: ``value_text``; ``key_text`` writes the same
text for any string Spark can hold, which has no lone surrogates).

Inputs are the JSON texts of the arrival columns (``key`` as ``key_text``, values as
``value_text``: compact, members in order, control characters as ``\\u001f`` lower-case), a
windowed key's ``wstart``/``wend``. Each node of a form becomes a few SQL pieces built on demand:
its canonical JSON text (NULL for null), its TEXT (spec, "Expressions"), its raw string, its Java
long, its normal form for JSON equality.

How the JSON is read (:func:`_member`): a member that is a simple scalar of an object with no
nested object before it is cut out of the text by one regular expression; any other by Spark's
``get_json_object`` (member order kept), whose writer escapes as Jackson does (``\\u001F``
upper-case, which :func:`_recase` turns back). Types come from a JSON text's first character, an
integer from ``try_cast(... AS BIGINT)`` (the texts are canonical: no sign, space or leading
zero). JSON equality of objects compares ``to_json(try_parse_json(...))``, which sorts members.
A piece used several times (a member read) is written once and evaluated once
(:meth:`_Context.finish`).

What is not exact, and how the callers stay exact: Spark's JSON writer re-renders floats
(``1e+16`` becomes ``1.0E16``), TEXT of a float is Java's ``Double.toString`` (the model's
:func:`java_double`, which Java 17's Spark does not always print), and a VARIANT holds integers
beyond 38 digits as doubles. Every piece that would be wrong on such a text marks the input it
reads, and :class:`NativeSql` carries a ``guard``: the rows whose marked inputs hold nothing that
looks like a float (:data:`RISKY`; :data:`HUGE` too where a VARIANT reads them), looked for in the
whole text, strings included: a false alarm only costs the UDF. Pieces that never depend on a
number's spelling (``is_null``, ``add``, ``mod``, ordering, equality with a string, an integer or
a boolean) mark nothing, so ``cmp`` of a member with an integer needs no guard. The callers
(:mod:`spark_backend.graph.mappers`) drop the guard for a scenario whose records hold plain
numbers only (:data:`PLAIN`: known from its inputs and constants), and run the UDF on the guarded
rows otherwise. A text holding NaN or Infinity (Python writes them, Spark's reader refuses the
whole text) is not handled here: the callers keep the UDF for a scenario whose inputs hold one
(:data:`NON_FINITE`).

Not native (None: the caller keeps the UDF): a Python callable (the Python API's mappers), a
member name Spark's JSON path cannot spell (empty, ``*``, with ``'``, or starting with a
space, tab or line break), a constant holding a lone surrogate, and JSON equality of possible
objects against a constant holding a float or a 39-digit integer.
"""
from __future__ import annotations

import json
from typing import Optional

import attrs

from kssim.reference.model.graph import expressions as ex

#: what a float looks like in a canonical text (Python's repr: a digit, then a fraction or an
#: exponent with its sign; or a non-finite name): the guard looks for it (see the module docstring)
RISKY = "[0-9][.]|[0-9]e[-+]|NaN|Infinity"
#: an integer a VARIANT holds as a double (equality of objects): what the guard also looks for then
HUGE = "[0-9]{39}"

_LONG_SPAN = 1 << 64


class _NotNative(Exception):
    """A form (or a constant in it) that has no exact native column."""


@attrs.frozen
class NativeSql:
    """A native column as Spark SQL: ``sql`` the value; ``guard`` a boolean SQL true on the rows
    where ``sql`` is exact (None: every row)."""

    sql: str
    guard: Optional[str] = None


@attrs.frozen
class Native:
    """:class:`NativeSql` as Columns: ``column`` is exact where ``exact`` is true (None: always)."""

    column: object
    exact: object = None


@attrs.frozen
class Inputs:
    """The SQL of the input columns: the key's and the value's JSON text, the window bounds."""

    key: str = "key"
    value: str = "value"
    wstart: str = "wstart"
    wend: str = "wend"


# --- SQL text ------------------------------------------------------------------------------------

def lit(s: str) -> str:
    """A Spark SQL string literal of ``s``: printable ASCII as it is but for the quote and the
    backslash, every other character as a ``\\u`` escape (supplementary ones as their surrogate
    pair), so no quoting rule can bite."""
    out = []
    for char in s:
        if " " <= char <= "~" and char not in "'\\":
            out.append(char)
            continue
        code = ord(char)
        if 0xD800 <= code <= 0xDFFF:
            raise _NotNative("a lone surrogate")  # Spark strings are UTF-8
        if code >= 0x10000:
            code -= 0x10000
            out.append(f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}")
        else:
            out.append(f"\\u{code:04x}")
    return "'" + "".join(out) + "'"


def _long_lit(n: int) -> str:
    return f"CAST('{n}' AS BIGINT)"  # -9223372036854775808L is not a literal Spark parses


def _concat(*parts: str) -> str:
    return f"concat({', '.join(parts)})"


#: the \u00XX escapes whose hex has a letter: json.dumps writes them lower-case, Jackson upper-case
_LETTER_ESCAPES = ("0b", "0e", "0f", "1a", "1b", "1c", "1d", "1e", "1f")


def _recase(text: str, upper: bool) -> str:
    """``text`` (JSON) with those escapes in the other case. An escaped backslash (``\\\\``) is
    parked as a raw U+0001 first, which no JSON text holds unescaped, so ``\\\\u001f`` (a
    backslash, then the letters u001f) is left alone."""
    out = f"replace({text}, {lit(chr(92) * 2)}, {lit(chr(1))})"
    for hex_ in _LETTER_ESCAPES:
        old, new = "\\u00" + hex_, "\\u00" + hex_.upper()
        out = f"replace({out}, {lit(new if not upper else old)}, {lit(old if not upper else new)})"
    return f"replace({out}, {lit(chr(1))}, {lit(chr(92) * 2)})"


def _escape(text: str) -> str:
    """A JSON string's content for ``text`` that holds no control character (a JSON text):
    backslashes and quotes escaped."""
    return f"replace(replace({text}, {lit(chr(92))}, {lit(chr(92) * 2)}), {lit(chr(34))}, {lit(chr(92) + chr(34))})"


def _unquote(quoted: str) -> str:
    """The characters of a JSON string text: its inside when it has no escape, else Spark's reader."""
    return (f"CASE WHEN instr({quoted}, {lit(chr(92))}) = 0 THEN substr({quoted}, 2, length({quoted}) - 2) "
            f"ELSE get_json_object(concat('[', {quoted}, ']'), '$[0]') END")


def _and(*parts: str) -> str:
    parts = [p for p in parts if p != "true"]
    if "false" in parts:
        return "false"
    return "true" if not parts else "(" + " AND ".join(parts) + ")"


def _or(*parts: str) -> str:
    parts = [p for p in parts if p != "false"]
    if "true" in parts:
        return "true"
    return "false" if not parts else "(" + " OR ".join(parts) + ")"


def _not(part: str) -> str:
    return {"true": "false", "false": "true"}.get(part, f"(NOT {part})")


# --- the nodes -----------------------------------------------------------------------------------

class _Context:
    """One compilation: the inputs, what it read in a way that floats would spoil (the guard's
    inputs), and its *lets*: pieces used several times (a member read, a side of an equality),
    each written once and evaluated once (:meth:`finish`)."""

    def __init__(self, inputs: Inputs):
        self.inputs = inputs
        self.risky = set()
        self.huge = set()  # the inputs whose huge integers would spoil a piece too
        self.lets = []

    def let(self, sql: str) -> str:
        """A stand-in for ``sql`` that :meth:`finish` replaces: a plain column stands for itself."""
        if sql in (self.inputs.key, self.inputs.value):
            return sql
        token = f"\x00{len(self.lets)}\x00"  # no SQL text holds a NUL: lit() escapes it
        self.lets.append((token, sql))
        return token

    def finish(self, sql: str) -> str:
        """``sql`` with its lets in place: one used once is written there; one used more is bound
        once by a lambda, ``transform(array(piece), v -> sql)[0]``, so neither the SQL text nor
        the work grows with the uses (Spark shares repeated pieces only where they are always
        evaluated, never inside a CASE over instances). Later lets may use earlier ones: they
        are put in place first, innermost."""
        for index in range(len(self.lets) - 1, -1, -1):
            token, piece = self.lets[index]
            uses = sql.count(token)
            if uses == 1:
                sql = sql.replace(token, piece)
            elif uses > 1:
                sql = f"transform(array({piece}), kx{index} -> {sql.replace(token, f'kx{index}')})[0]"
        return sql

    def guard(self) -> Optional[str]:
        """The rows where no risky input holds what :data:`RISKY` (and :data:`HUGE`) look for.
        Written to spare most rows the regular expression: a byte search first for the character
        or pair each alternative needs ('.', 'e+'/'e-', 'NaN', 'Infinity')."""
        if not self.risky:
            return None
        tests = []
        for source in sorted(self.risky):
            exponent = f"(contains({source}, 'e+') OR contains({source}, 'e-'))"
            found = [f"(contains({source}, '.') AND {source} RLIKE {lit('[0-9][.]')})",
                     f"({exponent} AND {source} RLIKE {lit('[0-9]e[-+]')})",
                     f"contains({source}, 'NaN')", f"contains({source}, 'Infinity')"]
            if source in self.huge:
                found.append(f"{source} RLIKE {lit(HUGE)}")
            tests.append(f"NOT coalesce({' OR '.join(found)}, false)")
        return _and(*tests)


class _Node:
    """One node's SQL pieces. ``kind``: what it is when not null, if known before running
    ('string', 'int' (a Java long), 'bool', 'null', 'object', 'list', 'number'); None: data."""

    kind: Optional[str] = None
    nullable = True
    #: its normal form for JSON equality is exact (no float nor 39-digit integer in a constant)
    exact_norm = True

    def json(self) -> str:
        """Its canonical JSON text, NULL for null."""
        raise NotImplementedError

    def tjson(self) -> str:
        """Its JSON as TEXT writes it nested in an object (Jackson's String writer)."""
        return _recase(self.json(), upper=True)

    def string(self) -> str:
        """Its characters when it is a string, else NULL."""
        return "CAST(NULL AS STRING)"

    def long(self) -> str:
        """Its value when it is an integer within the Java long range, else NULL."""
        return "CAST(NULL AS BIGINT)"

    def is_null(self) -> str:
        return f"({self.json()} IS NULL)"

    def text(self) -> str:
        """TEXT (never null)."""
        raise NotImplementedError

    def esc_text(self) -> str:
        """TEXT as it stands inside a canonical JSON string (escaped)."""
        raise NotImplementedError

    def scalar(self) -> str:
        """A text that is the canonical one when the value is null, a boolean or an integer."""
        return self.json()


class _Data(_Node):
    """A value read from the record: ``base`` its canonical JSON text (as ``value_text`` writes
    it; NULL for null), except that a member's numbers are spelled by Spark's JSON writer
    (``exact_json`` False: :meth:`json` needs the guard); ``source`` the input column it comes
    from, marked risky when a piece depends on a number's spelling."""

    def __init__(self, ctx: _Context, base: str, source: str, exact_json: bool):
        self.ctx, self.base, self.source, self.exact_json = ctx, base, source, exact_json

    def _risky(self) -> None:
        self.ctx.risky.add(self.source)

    def _starts(self, *chars: str) -> str:
        return _or(*[f"startswith({self.base}, {lit(c)})" for c in chars])

    def json(self):
        if not self.exact_json:
            self._risky()
        return self.base

    def tjson(self):
        self._risky()
        return _recase(self.base, upper=True)

    def scalar(self):
        return self.base  # a string, an integer, a boolean: spelled alike whatever the writer

    def string(self):
        return f"CASE WHEN {self._starts(chr(34))} THEN {_unquote(self.base)} END"

    def long(self):
        return f"try_cast({self.base} AS BIGINT)"

    def is_null(self):
        return f"({self.base} IS NULL)"

    def _by_kind(self, string: str, nested: str) -> str:
        self._risky()  # a number is printed as it is read
        return (f"CASE WHEN {self.base} IS NULL THEN 'null' WHEN {self._starts(chr(34))} THEN {string} "
                f"WHEN {self._starts('{', '[')} THEN {nested} ELSE {self.base} END")

    def text(self):
        return self._by_kind(_unquote(self.base), self.tjson())

    def esc_text(self):
        inside = self.json()
        return self._by_kind(f"substr({inside}, 2, length({inside}) - 2)", _escape(self.tjson()))


def _kind_of(value) -> str:
    if value is None:
        return "null"
    return {str: "string", bool: "bool", dict: "object", list: "list"}.get(
        value.__class__, "int" if ex.is_integer(value) else "number")


#: what numbers a value holds: all spelled alike by Spark's JSON writer and ``value_text``; some
#: not (a float, an integer of 39 digits or more: a VARIANT holds it as a double); NaN or Infinity,
#: which Spark's JSON reader refuses (the whole text reads as null)
PLAIN, INEXACT, NON_FINITE = "plain", "inexact", "non_finite"


def worst(found) -> str:
    """The worst of some of :data:`PLAIN`, :data:`INEXACT`, :data:`NON_FINITE` (none: plain)."""
    return next((n for n in (NON_FINITE, INEXACT) if n in found), PLAIN)


def numbers_in(value) -> str:
    """What numbers a JSON value holds (see :data:`PLAIN`)."""
    if isinstance(value, (dict, list)):
        return worst({numbers_in(v) for v in (value.values() if isinstance(value, dict) else value)})
    if value.__class__ is float:
        return INEXACT if value == value and value not in (float("inf"), float("-inf")) else NON_FINITE
    return INEXACT if value.__class__ is int and abs(value) >= 10 ** 38 else PLAIN


class _Const(_Node):
    """A constant: every piece a literal, computed by the shared model."""

    def __init__(self, value):
        self.value = value
        self.kind = _kind_of(value)
        self.nullable = value is None
        self.exact_norm = numbers_in(value) == PLAIN
        self._json = None if value is None else json.dumps(value, separators=(",", ":"), ensure_ascii=False)
        lit(ex.text(value))  # refuse lone surrogates now

    def json(self):
        return "CAST(NULL AS STRING)" if self._json is None else lit(self._json)

    def tjson(self):
        return "CAST(NULL AS STRING)" if self.value is None else lit(ex.text([self.value])[1:-1])

    def string(self):
        return lit(self.value) if self.kind == "string" else super().string()

    def long(self):
        return _long_lit(self.value) if self.kind == "int" else super().long()

    def is_null(self):
        return "true" if self.value is None else "false"

    def text(self):
        return lit(ex.text(self.value))

    def esc_text(self):
        return lit(json.dumps(ex.text(self.value), ensure_ascii=False)[1:-1])


class _Concat(_Node):
    kind, nullable = "string", False

    def __init__(self, parts):
        self.parts = parts

    def json(self):
        return _concat("'\"'", *[p.esc_text() for p in self.parts], "'\"'") if self.parts else lit('""')

    def string(self):
        return self.text()

    def is_null(self):
        return "false"

    def text(self):
        return _concat(*[p.text() for p in self.parts]) if self.parts else "''"

    def esc_text(self):
        return _concat(*[p.esc_text() for p in self.parts]) if self.parts else "''"


class _Nested(_Node):
    """An ``object`` or a ``list`` expression: its JSON is built from its parts' JSON."""

    nullable = False

    def __init__(self, kind, names, parts):
        self.kind, self.names, self.parts = kind, names, parts
        self.exact_norm = all(p.exact_norm for p in parts)

    def _build(self, piece, quote) -> str:
        opening, closing = ("{", "}") if self.kind == "object" else ("[", "]")
        pieces = []
        for i, part in enumerate(self.parts):
            label = "" if self.kind == "list" else quote(self.names[i]) + ":"
            pieces += [lit(("," if i else opening) + label), f"coalesce({piece(part)}, 'null')"]
        return _concat(*pieces, lit(closing)) if pieces else lit(opening + closing)

    def json(self):
        return self._build(lambda p: p.json(), lambda n: json.dumps(n, ensure_ascii=False))

    def tjson(self):
        return self._build(lambda p: p.tjson(), lambda n: ex.text([n])[1:-1])

    def is_null(self):
        return "false"

    def text(self):
        return self.tjson()

    def esc_text(self):
        return _escape(self.tjson())


class _Integer(_Node):
    """``add`` and ``mod``: a Java long or null; ``sql`` its BIGINT."""

    kind = "int"

    def __init__(self, sql):
        self.sql = sql

    def json(self):
        return f"CAST({self.sql} AS STRING)"

    def tjson(self):
        return self.json()

    def long(self):
        return self.sql

    def is_null(self):
        return f"({self.sql} IS NULL)"

    def text(self):
        return f"coalesce({self.json()}, 'null')"

    def esc_text(self):
        return self.text()


def _add(a: _Node, b: _Node) -> _Node:
    # Java long addition: the exact sum (DECIMAL, no overflow) brought back into the long range
    total = f"(CAST({a.long()} AS DECIMAL(20,0)) + CAST({b.long()} AS DECIMAL(20,0)))"
    wrapped = f"(pmod({total} + {1 << 63}BD, {_LONG_SPAN}BD) - {1 << 63}BD)"
    return _Integer(f"CAST({wrapped} AS BIGINT)")


def _mod(x: _Node, divisor: int) -> _Node:
    if divisor > 0:
        return _Integer(f"pmod({x.long()}, {_long_lit(divisor)})")  # pmod is floorMod for n > 0
    # floorMod(x, d) = ((x % d) + d) % d; |x % d| < |d|, so BIGINT cannot overflow while |d| <= 2^62
    if divisor >= -(1 << 62):
        d = _long_lit(divisor)
        return _Integer(f"((({x.long()} % {d}) + {d}) % {d})")
    d = f"{divisor}BD"
    return _Integer(f"CAST(((CAST({x.long()} AS DECIMAL(20,0)) % {d}) + {d}) % {d} AS BIGINT)")


# --- compiling -------------------------------------------------------------------------------------

def _path(name: str) -> str:
    """``$[*]['name']``. Spark's JSON path reads ['name'] up to the next quote, takes '*' as the
    wildcard and skips leading white space (found by trying every kind of name)."""
    if not name or name == "*" or "'" in name or name[0] in " \t\n\r\x0b\x0c":
        raise _NotNative(f"a member name Spark's JSON path cannot spell: {name!r}")
    return lit(f"$[*]['{name}']")


def _regex_literal(s: str) -> str:
    """``s`` matched literally by a Java regular expression (ASCII punctuation escaped)."""
    return "".join(c if c.isalnum() or not c.isascii() else "\\" + c for c in s)


def _member(ctx: _Context, text: str, name: str) -> _Data:
    """Member ``name`` of the JSON text ``text`` (canonical) as canonical JSON text.

    Where ``text`` is an object with no brace before the member and the member is a string
    without escapes, an integer, a boolean or null, one regular expression cuts it out of the
    text: ``,"name":`` or ``{"name":`` is always a member's name there (quotes inside strings are
    escaped), and a top-level one when no brace comes before it. Otherwise (an object or a list,
    escapes, a float, a nested object first, no such member) Spark's reader: the path
    ``$[*]['name']`` over ``[text]`` makes it write the member as JSON (a string quoted, member
    order kept; plain ``$['name']`` writes a string unquoted), with Jackson's escapes, which
    :func:`_recase` turns back. Each piece is written once (no CASE that repeats it)."""
    label = _regex_literal(json.dumps(name, ensure_ascii=False))
    scalar = f'^\\{{(?:[^{{]*?,)?{label}:("[^"\\\\]*"|-?[0-9]+|true|false|null)[,}}]'
    cut = f"nullif(regexp_extract({text}, {lit(scalar)}, 1), '')"
    read = f"get_json_object(concat('[', {text}, ']'), {_path(name)})"  # NULL for a null member
    base = f"nullif(coalesce({cut}, {_recase(read, upper=False)}), 'null')"
    return _Data(ctx, ctx.let(base), text, False)


def _windowed_key(inputs: Inputs) -> str:
    """``$key`` as text: a windowed key is ``{"key":K,"start":S,"end":E}``."""
    return (f"CASE WHEN {inputs.wstart} IS NULL THEN {inputs.key} ELSE "
            + _concat(lit('{"key":'), f"coalesce({inputs.key}, 'null')", lit(',"start":'),
                      f"CAST({inputs.wstart} AS STRING)", lit(',"end":'),
                      f"coalesce(CAST({inputs.wend} AS STRING), 'null')", "'}'") + " END")


def _key_field(ctx: _Context, name: str) -> _Data:
    """``key_field``: a member of the key, or of the windowed key's object."""
    inputs = ctx.inputs
    plain = _member(ctx, inputs.key, name).base
    windowed = {"key": inputs.key, "start": f"CAST({inputs.wstart} AS STRING)",
                "end": f"CAST({inputs.wend} AS STRING)"}.get(name, "CAST(NULL AS STRING)")
    # canonical escapes throughout; the member's numbers are still spelled by Spark's writer
    return _Data(ctx, ctx.let(f"CASE WHEN {inputs.wstart} IS NULL THEN {plain} ELSE {windowed} END"), inputs.key,
                 False)


def _node(expr, ctx: _Context) -> _Node:
    kind = expr.__class__
    inputs = ctx.inputs
    if kind is ex.ValueRef:
        return _Data(ctx, inputs.value, inputs.value, True)
    if kind is ex.KeyRef:
        return _Data(ctx, ctx.let(_windowed_key(inputs)), inputs.key, True)
    if kind is ex.Field:
        return _member(ctx, inputs.value, expr.name)
    if kind is ex.KeyField:
        return _key_field(ctx, expr.name)
    if kind is ex.Const:
        return _Const(expr.value)
    if kind is ex.Concat:
        return _Concat([_node(p, ctx) for p in expr.parts])
    if kind is ex.ObjectExpr:
        return _Nested("object", [n for n, _ in expr.members], [_node(m, ctx) for _, m in expr.members])
    if kind is ex.ListExpr:
        return _Nested("list", None, [_node(p, ctx) for p in expr.parts])
    if kind is ex.Add:
        return _add(_node(expr.left, ctx), _node(expr.right, ctx))
    if kind is ex.Mod:
        return _mod(_node(expr.expr, ctx), expr.divisor)
    raise _NotNative(f"not an expression of the language: {expr!r}")  # a Python API callable


def _equal(a: _Node, b: _Node, ctx: _Context) -> str:
    """JSON equality, nulls included (``==``): never null."""
    a_null, b_null = a.is_null(), b.is_null()
    if a.kind == "null" or b.kind == "null":
        return _and(a_null, b_null)
    kinds = {a.kind, b.kind} - {None}
    if len(kinds) > 1:
        same = "false"  # two different known types ('number': a float or an integer beyond long)
    elif kinds & {"string", "bool"}:
        same = f"({a.scalar()} = {b.scalar()})"  # canonical texts, equal exactly for equal strings
    elif "int" in kinds:
        same = f"({a.long()} = {b.long()})"  # the other may be beyond the long range: unequal
    elif "number" in kinds:
        same = f"({a.json()} = {b.json()})"
    else:  # objects and lists, or data: equal texts, or JSON-equal objects in another order
        if not (a.exact_norm and b.exact_norm):
            raise _NotNative("JSON equality of possible objects with a float or huge constant")
        ja, jb = ctx.let(a.json()), ctx.let(b.json())
        # the texts of JSON-equal values differ only by member order: objects inside, same length
        same = _or(f"({ja} = {jb})", _and(f"(instr({ja}, '{{') > 0)", f"(instr({jb}, '{{') > 0)",
                                          f"(length({ja}) = length({jb}))", f"({_norm(a, ja)} = {_norm(b, jb)})"))
    if not a.nullable and not b.nullable:
        return f"coalesce({same}, false)"
    return f"(CASE WHEN {_or(a_null, b_null)} THEN {_and(a_null, b_null)} ELSE coalesce({same}, false) END)"


def _norm(node: _Node, json_text: str) -> str:
    """A text equal for JSON-equal values (objects' members sorted) from ``node``'s JSON text."""
    if isinstance(node, _Data):
        node._risky()  # a VARIANT holds a float or a huge integer otherwise
        node.ctx.huge.add(node.source)
    return f"to_json(try_parse_json({json_text}))"


def _utf16(node: _Node) -> str:
    if isinstance(node, _Const) and node.kind == "string":
        return "X'" + node.value.encode("utf-16-be").hex().upper() + "'"
    return f"encode({node.string()}, 'UTF-16BE')"


def _ordered(a: _Node, b: _Node, op: str) -> str:
    """Two integers numerically, two strings by UTF-16 code units, anything else false."""
    kinds = {a.kind, b.kind} - {None}
    tests = []
    if kinds <= {"int"}:
        tests.append(f"({a.long()} {op} {b.long()})")  # op: <, <=, > or >= (the parser checked)
    if kinds <= {"string"}:
        tests.append(f"({_utf16(a)} {op} {_utf16(b)})")
    return f"coalesce({', '.join(tests)}, false)" if tests else "false"


def _pred(pred, ctx: _Context) -> str:
    kind = pred.__class__
    if kind is ex.Cmp:
        a, b = _node(pred.left, ctx), _node(pred.right, ctx)
        if pred.op == "==":
            return _equal(a, b, ctx)
        if pred.op == "!=":
            return _not(_equal(a, b, ctx))
        return _ordered(a, b, pred.op)
    if kind is ex.IsNull:
        return _node(pred.expr, ctx).is_null()
    if kind is ex.Not:
        return _not(_pred(pred.pred, ctx))
    if kind is ex.And:
        return _and(*[_pred(p, ctx) for p in pred.preds])
    if kind is ex.Or:
        return _or(*[_pred(p, ctx) for p in pred.preds])
    raise _NotNative(f"not a predicate of the language: {pred!r}")


def _elements(node: _Node, ctx: _Context) -> str:
    """``flat_map_values``: the JSON text of each element (a list: its elements, a null one NULL
    as ``value_text`` writes it; null: NULL, no record; else the value alone)."""
    if isinstance(node, _Nested) and node.kind == "list":
        return f"CAST(array({', '.join(p.json() for p in node.parts)}) AS ARRAY<STRING>)"
    if isinstance(node, _Const) and node.kind == "list":
        texts = [_Const(e).json() for e in node.value]
        return f"CAST(array({', '.join(texts)}) AS ARRAY<STRING>)"
    text = ctx.let(node.json())
    one = f"CASE WHEN {text} IS NULL THEN CAST(NULL AS ARRAY<STRING>) ELSE array({text}) END"
    if node.kind is not None:
        return one
    node._risky()  # Spark's reader prints the elements' numbers
    # a list's elements: Spark's reader gives each one's JSON, but a string's characters
    # unquoted, so a VARIANT of the same element says which ones are strings
    split = (f"zip_with(from_json({text}, 'array<string>'), from_json({text}, 'array<variant>'), (s, v) -> "
             f"CASE WHEN s IS NULL THEN CAST(NULL AS STRING) WHEN schema_of_variant(v) = 'STRING' "
             f"THEN {_recase('to_json(v)', upper=False)} ELSE {_recase('s', upper=False)} END)")
    return f"CASE WHEN startswith({text}, '[') THEN {split} ELSE {one} END"


def _compiled(build, inputs: Inputs) -> Optional[NativeSql]:
    ctx = _Context(inputs)
    try:
        sql = ctx.finish(build(ctx))
    except _NotNative:
        return None
    return NativeSql(sql, ctx.guard())


def expr_sql(expr, inputs: Inputs = Inputs(), as_key: bool = False) -> Optional[NativeSql]:
    """The JSON text of ``expr``'s result (NULL for null), as the UDF path writes it, or None if
    ``expr`` has no native form. Keys and values are the same text natively (``key_text`` only
    differs on lone surrogates, which a Spark string cannot hold), so ``as_key`` changes nothing."""
    return _compiled(lambda ctx: _node(expr, ctx).json(), inputs)


def pred_sql(pred, inputs: Inputs = Inputs()) -> Optional[NativeSql]:
    """The truth of ``pred`` (a boolean, never null), or None."""
    return _compiled(lambda ctx: _pred(pred, ctx), inputs)


def elements_sql(expr, inputs: Inputs = Inputs()) -> Optional[NativeSql]:
    """``flat_map_values``' ``array<string>`` of element texts (NULL: no record), or None."""
    return _compiled(lambda ctx: _elements(_node(expr, ctx), ctx), inputs)


def _as_columns(native: Optional[NativeSql]) -> Optional[Native]:
    if native is None:
        return None
    from pyspark.sql import functions as F

    return Native(F.expr(native.sql), None if native.guard is None else F.expr(native.guard))


def native_expr(expr, key_col="key", value_col="value", wstart_col="wstart", wend_col="wend",
                as_key: bool = False) -> Optional[Native]:
    """:func:`expr_sql` as a Column over the named columns."""
    return _as_columns(expr_sql(expr, Inputs(key_col, value_col, wstart_col, wend_col), as_key))


def native_pred(pred, key_col="key", value_col="value", wstart_col="wstart", wend_col="wend") -> Optional[Native]:
    """:func:`pred_sql` as a Column over the named columns."""
    return _as_columns(pred_sql(pred, Inputs(key_col, value_col, wstart_col, wend_col)))


def native_elements(expr, key_col="key", value_col="value", wstart_col="wstart", wend_col="wend") -> Optional[Native]:
    """:func:`elements_sql` as a Column over the named columns."""
    return _as_columns(elements_sql(expr, Inputs(key_col, value_col, wstart_col, wend_col)))
