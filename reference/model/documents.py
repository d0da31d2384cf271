"""Scenario documents read strictly: JSON and YAML text to plain JSON values, or a ScenarioError.

Contract of :func:`read_document` (the one reader of scenario files, so every command and both
engines see the same errors): the result holds only JSON values (dict with str keys, list, str,
int, finite float, bool, None), nested at most :data:`MAX_NESTING` levels. Everything else is a
:class:`ScenarioError` naming the file and the place (``line 3, column 7`` or ``inputs[2].key``):

- text that is not UTF-8 (UTF-16 and UTF-32, with or without BOM, are named as such; other bytes
  by their line and column); a UTF-8 BOM is allowed;
- duplicate keys in an object (JSON or YAML): never last-one-wins;
- nesting deeper than :data:`MAX_NESTING` (the parsers recurse; deep values would reach Python's
  recursion limit later, in an engine);
- NaN and infinities (no JSON value, and never equal to themselves);
- YAML is read by the YAML 1.2 core schema (only ``true``/``false`` are booleans, only
  ``null``/``~``/empty are null; no dates, no sexagesimal or ``_`` numbers), and a plain scalar
  that YAML 1.1 (PyYAML's ``safe_load``, SnakeYAML) would read differently (``NO``, ``on``,
  ``1:30``, ``2024-01-01``, ``017``, ``0o17``, ``1_000``) is rejected with the advice to quote it,
  since the same file would mean two things depending on the reader;
- explicit YAML tags that build other types (``!!binary``, ``!!set``, ``!!timestamp``).

Cost: one parse plus one iterative walk over the values, O(size of the document).
"""
from __future__ import annotations

import codecs
import json
import math
import os
import re

from kssim.reference.model.errors import ScenarioError

#: the deepest nesting of objects and lists a scenario may hold (Jackson's default limit is 1000;
#: kssim's engines and renderers recurse over values, so it keeps well below Python's 1000 frames)
MAX_NESTING = 200

#: byte-order marks of encodings other than UTF-8 (UTF-32 first: its LE mark starts with UTF-16's)
_BOMS = ((codecs.BOM_UTF32_LE, "UTF-32 (little-endian, with BOM)"),
         (codecs.BOM_UTF32_BE, "UTF-32 (big-endian, with BOM)"),
         (codecs.BOM_UTF16_LE, "UTF-16 (little-endian, with BOM)"),
         (codecs.BOM_UTF16_BE, "UTF-16 (big-endian, with BOM)"))


def read_document(path):
    """Parse a scenario file as JSON (``.json``) or YAML (``.yaml``/``.yml``); see the module doc."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise ScenarioError(path, "", f"cannot read file: {exc.strerror}") from None
    text = _decode(path, data)
    if path.endswith((".yaml", ".yml")):
        doc = _parse_yaml(path, text)
    else:
        doc = _parse_json(path, text)
    _check_values(path, doc, text)
    return doc


# --- bytes to text --------------------------------------------------------------------------

def _decode(path, data: bytes) -> str:
    for bom, name in _BOMS:
        if data.startswith(bom):
            raise ScenarioError(path, "", f"the file is {name}: scenario files are UTF-8; convert it "
                                          "(e.g. iconv -t UTF-8) and try again")
    wide = _wide_encoding(data)
    if wide:
        raise ScenarioError(path, "", f"the file looks like {wide} (NUL bytes between characters): scenario "
                                      "files are UTF-8; convert it (e.g. iconv -f UTF-16 -t UTF-8) and try again")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        start = exc.start
        line = data.count(b"\n", 0, start) + 1
        column = start - (data.rfind(b"\n", 0, start) + 1) + 1
        raise ScenarioError(path, f"line {line}, column {column}",
                            f"not UTF-8: byte 0x{data[start]:02x} cannot start or continue a UTF-8 character "
                            "(save the file as UTF-8)") from None


def _wide_encoding(data: bytes):
    """UTF-16/32 without BOM, by RFC 4627's rule: ASCII text shows NUL bytes next to each character."""
    head = data[:4]
    if len(head) < 2 or b"\x00" not in head:
        return None
    if len(head) == 4 and head[:3] == b"\x00\x00\x00":
        return "UTF-32 (big-endian)"
    if len(head) == 4 and head[1:] == b"\x00\x00\x00":
        return "UTF-32 (little-endian)"
    if head[0] == 0:
        return "UTF-16 (big-endian)"
    if head[1] == 0:
        return "UTF-16 (little-endian)"
    return None


# --- JSON -----------------------------------------------------------------------------------

class _DuplicateKey(dict):
    """An object that had a key twice; :func:`_check_values` reports it with its place."""

    duplicate: str = ""
    line = None


def _object_without_duplicates(pairs):
    obj = dict(pairs)
    if len(obj) == len(pairs):
        return obj
    seen = set()
    marked = _DuplicateKey(pairs)
    for key, _ in pairs:
        if key in seen:
            marked.duplicate = key
            break
        seen.add(key)
    return marked


def _parse_json(path, text: str):
    try:
        return json.loads(text, object_pairs_hook=_object_without_duplicates)
    except json.JSONDecodeError as exc:
        raise ScenarioError(path, f"line {exc.lineno}, column {exc.colno}", f"not valid JSON: {exc.msg}") from None
    except RecursionError:
        raise ScenarioError(path, _too_deep_place(text), f"nested more than {MAX_NESTING} levels deep") from None


def _too_deep_place(text: str) -> str:
    """The line and column where JSON text first nests deeper than :data:`MAX_NESTING` (error path only)."""
    depth, in_string, escaped, line, column = 0, False, False, 1, 0
    for char in text:
        column += 1
        if char == "\n":
            line, column = line + 1, 0
        elif in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > MAX_NESTING:
                return f"line {line}, column {column}"
        elif char in "]}":
            depth -= 1
    return ""


# --- YAML: the 1.2 core schema, and no scalar that YAML 1.1 reads otherwise -------------------

class _Ambiguous:
    """A plain YAML scalar that YAML 1.1 and 1.2 read differently; reported by :func:`_check_values`."""

    __slots__ = ("text", "line", "column", "core", "yaml11")

    def __init__(self, text, line, column, core, yaml11):
        self.text, self.line, self.column, self.core, self.yaml11 = text, line, column, core, yaml11

    def message(self) -> str:
        return (f"the unquoted YAML value {self.text} means {self.core!r} in YAML 1.2 but {self.yaml11!r} in YAML 1.1 "
                f"(PyYAML, SnakeYAML): quote it ('{self.text}') for the text, or write the value you mean "
                f"unambiguously (true/false, a plain decimal number)")


_CORE_RESOLVERS = (
    ("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$", "~nN"),
    ("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    ("tag:yaml.org,2002:int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", "-+0123456789"),
    ("tag:yaml.org,2002:float", r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
                                r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$", "-+.0123456789"),
)


def _yaml_classes():
    """The YAML 1.2 core loader and the 1.1 resolver it compares against (built once, lazily)."""
    import yaml

    class Yaml11Resolver(yaml.resolver.Resolver):
        pass

    class CoreLoader(yaml.SafeLoader):
        yaml_implicit_resolvers: dict = {}

        def construct_mapping(self, node, deep=False):
            if isinstance(node, yaml.MappingNode):
                self.flatten_mapping(node)
            mapping = {}
            duplicate = None
            for key_node, value_node in node.value:
                key = self.construct_object(key_node, deep=deep)
                if isinstance(key, (_Ambiguous, list, dict)):
                    mark = key_node.start_mark
                    raise ScenarioError(self.scenario_path, f"line {mark.line + 1}, column {mark.column + 1}",
                                        key.message() if isinstance(key, _Ambiguous) else "an object key must be text")
                if key in mapping and duplicate is None:
                    duplicate = (key, key_node.start_mark)
                mapping[key] = self.construct_object(value_node, deep=deep)
            if duplicate is not None:
                marked = _DuplicateKey(mapping)
                marked.duplicate, marked.line = duplicate[0], duplicate[1].line + 1
                return marked
            return mapping

        def construct_scalar_checked(self, node):
            """A plain scalar by the core schema, or an :class:`_Ambiguous` when YAML 1.1 differs."""
            try:
                value = _CORE_CONSTRUCTORS[node.tag](self, node)
            except ValueError:  # an explicit tag on text that is no such value: !!int abc
                raise yaml.constructor.ConstructorError(None, None, f"{node.value!r} is not a valid "
                                                        f"{node.tag.rsplit(':', 1)[-1]}", node.start_mark) from None
            if node.style is not None:  # quoted or block scalars are always text
                return value
            old_tag = yaml11.resolve(yaml.ScalarNode, node.value, (True, False))
            if old_tag == node.tag == "tag:yaml.org,2002:str":
                return value
            old = _yaml11_value(self, node, old_tag)
            if old_tag == node.tag and old == value and type(old) is type(value):
                return value
            return _Ambiguous(node.value, node.start_mark.line + 1, node.start_mark.column + 1, value, old)

    yaml11 = Yaml11Resolver()
    for tag, pattern, first in _CORE_RESOLVERS:
        first = list(first) + ([""] if tag.endswith(":null") else [])  # '' is how PyYAML files the empty scalar
        CoreLoader.add_implicit_resolver(tag, re.compile(pattern), first)
    # every plain scalar goes through the check; the 1.2 tag decides its value
    for tag in ("tag:yaml.org,2002:str", "tag:yaml.org,2002:int", "tag:yaml.org,2002:float",
                "tag:yaml.org,2002:bool", "tag:yaml.org,2002:null"):
        CoreLoader.add_constructor(tag, CoreLoader.construct_scalar_checked)
    CoreLoader.add_constructor("tag:yaml.org,2002:map", CoreLoader.construct_mapping)
    return yaml, CoreLoader


def _core_int(loader, node):
    text = loader.construct_scalar(node)
    if text.startswith("0o"):
        return int(text[2:], 8)
    if text.startswith("0x"):
        return int(text[2:], 16)
    return int(text, 10)


def _core_float(loader, node):
    import yaml

    return yaml.constructor.SafeConstructor.construct_yaml_float(loader, node)


def _core_bool(loader, node):
    text = loader.construct_scalar(node).lower()
    if text not in ("true", "false"):
        raise ValueError(text)
    return text == "true"


_CORE_CONSTRUCTORS = {
    "tag:yaml.org,2002:str": lambda loader, node: loader.construct_scalar(node),
    "tag:yaml.org,2002:int": _core_int,
    "tag:yaml.org,2002:float": _core_float,
    "tag:yaml.org,2002:bool": _core_bool,
    "tag:yaml.org,2002:null": lambda loader, node: None,
}


def _yaml11_value(loader, node, tag):
    """What PyYAML's YAML 1.1 ``safe_load`` makes of a plain scalar resolved to ``tag``."""
    import yaml

    constructor = yaml.SafeLoader.yaml_constructors.get(tag)
    if constructor is None:  # '=' (tag:yaml.org,2002:value) has no constructor: safe_load fails on it
        return f"<{tag.rsplit(':', 1)[-1]}>"
    try:
        value = constructor(loader, yaml.ScalarNode(tag, node.value, node.start_mark, node.end_mark))
    except (ValueError, yaml.YAMLError):
        return f"<invalid {tag.rsplit(':', 1)[-1]}>"
    if hasattr(value, "__next__"):  # constructors of collections are generators
        return list(value)
    return value


_YAML = None


def _parse_yaml(path, text: str):
    global _YAML
    if _YAML is None:
        _YAML = _yaml_classes()
    yaml, loader_class = _YAML
    if text.count("[") + text.count("{") > MAX_NESTING:
        # PyYAML takes seconds over thousands of nested flow collections before it fails: refuse
        # them first (brackets in quoted text hardly reach the limit)
        place = _too_deep_place(text)
        if place:
            raise ScenarioError(path, place, f"nested more than {MAX_NESTING} levels deep")
    loader = loader_class(text)
    loader.scenario_path = path
    try:
        return loader.get_single_data()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ScenarioError(path, where, f"not valid YAML: {getattr(exc, 'problem', None) or exc}") from None
    except RecursionError:
        raise ScenarioError(path, _too_deep_place(text), f"nested more than {MAX_NESTING} levels deep") from None
    finally:
        loader.dispose()


# --- the values -----------------------------------------------------------------------------

def check_json_value(value, where: str) -> None:
    """A ScenarioError (naming ``where``) unless ``value`` is a plain JSON value: what the
    Python API checks of a record's key and value, by the rules of scenario files."""
    _check_values(None, value, None, where)


def _check_values(path, doc, text, root: str = "") -> None:
    """Walk the document (iteratively: it may be deep) and reject what is not a plain JSON value;
    ``text``: the document's text (None: a value built in Python, no alias can repeat it)."""
    stack = [(doc, root, 0)]
    budget = _walk_budget(text) if text is not None else float("inf")
    while stack:
        value, where, depth = stack.pop()
        budget -= 1
        if budget < 0:
            raise ScenarioError(path, "", "YAML aliases (*name) repeat parts of this document so often that it "
                                          "expands far beyond its size")
        if isinstance(value, _Ambiguous):
            raise ScenarioError(path, f"{where or 'document'} (line {value.line}, column {value.column})", value.message())
        if isinstance(value, dict):
            if depth >= MAX_NESTING:
                raise ScenarioError(path, _shortened(where), f"nested more than {MAX_NESTING} levels deep")
            if isinstance(value, _DuplicateKey):
                line = f" (line {value.line})" if value.line else ""
                raise ScenarioError(path, f"{where or 'document'}{line}",
                                    f"duplicate key {value.duplicate!r} in one object: each key may appear once")
            for key, item in value.items():
                if not isinstance(key, str):
                    raise ScenarioError(path, _join(where, str(key)), f"object keys must be text, got {key!r} "
                                                                      f"(quote it in YAML: '{key}')")
                if _lone_surrogate(key):
                    raise ScenarioError(path, _join(where, key), LONE_SURROGATE)
                stack.append((item, _join(where, key), depth + 1))
        elif isinstance(value, str):
            if _lone_surrogate(value):
                raise ScenarioError(path, where or "document", LONE_SURROGATE)
        elif isinstance(value, list):
            if depth >= MAX_NESTING:
                raise ScenarioError(path, _shortened(where), f"nested more than {MAX_NESTING} levels deep")
            for i, item in enumerate(value):
                stack.append((item, f"{where}[{i}]", depth + 1))
        elif isinstance(value, float):
            if not math.isfinite(value):
                raise ScenarioError(path, where or "document", f"{value} is not a JSON number (NaN and infinities "
                                                                "have no JSON form)")
        elif value is not None and not isinstance(value, (str, int)):  # bool is an int
            hint = " (an explicit YAML tag?)" if text is not None else ""
            raise ScenarioError(path, where or "document", f"a {type(value).__name__} is no JSON value{hint}: use "
                                                            "text, numbers, true/false, null, lists and objects")


#: a string with a lone surrogate (only a \uD800-\uDFFF escape makes one): no Kafka serializer writes it
LONE_SURROGATE = ("a lone surrogate escape (\\uD800-\\uDFFF without its pair) is not Unicode text: Kafka's UTF-8 "
                  "serializers cannot write it")


def _lone_surrogate(text: str) -> bool:
    return not text.isascii() and any(0xD800 <= ord(c) <= 0xDFFF for c in text)


def _walk_budget(text: str) -> int:
    """How many values a walk may visit: text without aliases holds fewer values than characters, and
    a YAML alias bomb (each alias repeating the previous ten) far more."""
    return 10 * len(text) + 100_000


def _shortened(where: str) -> str:
    return where if len(where) <= 60 else where[:60] + "..."


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key
