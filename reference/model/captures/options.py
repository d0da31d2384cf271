"""How to read captures: the input format, the key and value formats, topic mapping and ignored
topics (:class:`CaptureOptions`), their command-line options (:func:`add_capture_options`,
:func:`capture_options_from`, shared by ``kssim replay`` and ``kssim diff``) and the formats a
topology needs by default (:func:`default_text_formats`).
"""
from __future__ import annotations

import enum
import os
import re
from typing import Dict, FrozenSet, Mapping, Optional, Tuple

import attrs

from kssim.reference.model.errors import KssimError


class InputFormat(str, enum.Enum):
    """The format of a capture file."""

    AUTO = "auto"  # recognised from the content: the first non-blank line, or Parquet's magic bytes
    KCAT = "kcat"  # `kcat -C -J`: one JSON envelope a line (topic, partition, offset, tstype, ts, key, payload)
    CONSOLE = "console"  # kafka-console-consumer text with print.timestamp (and partition, offset, key, ...)
    JSONL = "jsonl"  # kssim's record files: topic, partition, offset, ts, key, value (JSON values)
    PARQUET = "parquet"  # kssim's record files as Parquet (key and value as JSON text)


#: the formats whose keys and values are bytes as text (``--key-format``/``--value-format`` apply)
TEXT_CAPTURE_FORMATS = (InputFormat.KCAT, InputFormat.CONSOLE)


class TextFormat(str, enum.Enum):
    """How the text of a captured key or value becomes the key or value kssim processes."""

    JSON = "json"  # the text is JSON (a JsonSerde / a JSON string serde): parsed, strictly
    STRING = "string"  # the text itself (a StringSerde), as a string


#: the captured topic name a console file takes from ``--input TOPIC=PATH``: Kafka's legal names
_TOPIC_NAME = re.compile(r"[A-Za-z0-9._-]+")


#: the topic name that sets a key or value format for every topic
ALL_TOPICS = "*"


def _per_topic(value) -> Mapping[str, TextFormat]:
    """A format for every topic (a TextFormat), or per topology topic (a mapping; ``*``: all)."""
    if value is None:
        return {}
    if isinstance(value, (TextFormat, str)):
        return {ALL_TOPICS: TextFormat(value)}
    return {topic: TextFormat(fmt) for topic, fmt in dict(value).items()}


@attrs.frozen
class CaptureOptions:
    """How to read captures. ``key_format``/``value_format``: a :class:`TextFormat` for every
    topic, or topology topic -> format (``*``: every topic); a topic not given reads as the
    topology needs (:func:`default_text_formats`). ``topics``: topology topic (``left``,
    ``right``, ``input``, ``output``) -> captured topic name; a topology topic not mapped keeps its
    own name. ``ignore_topics``: captured topic names whose records are skipped (and counted).
    ``console_key_separator``: kafka-console-consumer's ``key.separator`` (the separator of every
    field); ``console_headers``: the capture was made with ``print.headers=true`` (needed only when
    its first record has headers: ``NO_HEADERS`` is recognised)."""

    input_format: InputFormat = InputFormat.AUTO
    key_format: Mapping[str, TextFormat] = attrs.field(factory=dict, converter=_per_topic)
    value_format: Mapping[str, TextFormat] = attrs.field(factory=dict, converter=_per_topic)
    topics: Mapping[str, str] = attrs.field(factory=dict)
    ignore_topics: FrozenSet[str] = frozenset()
    console_key_separator: str = "\t"
    console_headers: bool = False


#: aggregations and joiners whose results are text (a String serde writes the output topic)
_TEXT_RESULTS = ("concat", "string_adder", "string_reduce")


def default_text_formats(topology) -> Dict[str, Tuple[TextFormat, TextFormat, str]]:
    """Topology topic -> ``(key format, value format, why)`` the topology needs when the options
    do not say: JSON where it reads into a key or value (an FK join's extractor or a GlobalKTable
    join's key mapper reading a field of the ``left`` key or value; the ``sum`` aggregation adding
    a topic's values), text otherwise (joiners, ``count``, ``list`` and the string aggregations
    take any value as it is). The ``output`` topic's values are JSON unless the topology writes
    text (the ``concat`` joiner, the string aggregations). A topology graph runs every topic with
    one JSON serde (``topology-graphs.md``, "Keys, values and their bytes"): its source and sink
    topics are JSON, keys and values."""
    from kssim.reference.model.topology import OPERATOR_INPUT_TOPICS, aggregation_for_topic, key_extractor_of

    if topology.operator == "graph":
        why = "a topology graph runs every topic with one JSON serde"
        return {topic: (TextFormat.JSON, TextFormat.JSON, why)
                for topic in tuple(topology.source_topics) + tuple(topology.sink_topics)}
    formats = {}
    for topic in OPERATOR_INPUT_TOPICS[topology.operator]:
        key_fmt = value_fmt = TextFormat.STRING
        why = []
        extractor = key_extractor_of(topology)
        if topic == "left" and extractor is not None and extractor.field is not None:
            what = "foreign key extractor" if topology.operator == "fk_join" else "key mapper"
            if extractor.source == "key":
                key_fmt = TextFormat.JSON
            else:
                value_fmt = TextFormat.JSON
            why.append(f"the {what} reads field {extractor.field!r} of the {extractor.source}")
        if aggregation_for_topic(topology, topic) == "sum":
            value_fmt = TextFormat.JSON
            why.append("the sum aggregation adds numbers")
        formats[topic] = (key_fmt, value_fmt, "; ".join(why) or "the topology reads no field of its keys or values")
    writes = [getattr(topology, name, None) for name in ("joiner", "aggregation", "left_aggregation")]
    text = any(isinstance(w, str) and w in _TEXT_RESULTS for w in writes)
    formats["output"] = (TextFormat.STRING, TextFormat.STRING if text else TextFormat.JSON,
                         "the topology writes text" if text else "the topology writes JSON values")
    return formats


def text_formats(options: CaptureOptions, topology, topic: str) -> Tuple[TextFormat, TextFormat]:
    """The key and value formats of ``topic``: the options', else what ``topology`` needs (no
    topology: text)."""
    defaults = default_text_formats(topology) if topology is not None else {}
    key_fmt, value_fmt, _ = defaults.get(topic, (TextFormat.STRING, TextFormat.STRING, ""))
    key_fmt = options.key_format.get(topic) or options.key_format.get(ALL_TOPICS) or key_fmt
    value_fmt = options.value_format.get(topic) or options.value_format.get(ALL_TOPICS) or value_fmt
    return key_fmt, value_fmt


# --- inputs ------------------------------------------------------------------------------------------

def split_input(text: str) -> Tuple[Optional[str], str]:
    """``(topic, path)`` of an ``--input``: ``TOPIC=PATH`` names the captured topic of a console
    capture (which holds no topic name); a plain path (or an existing file whose name holds
    ``=``) has no topic."""
    text = os.fspath(text)
    name, sep, path = text.partition("=")
    if not sep or os.path.exists(text) or not _TOPIC_NAME.fullmatch(name) or not path:
        return None, text
    return name, path


def input_paths(inputs) -> list:
    """The file or folder paths of ``--input`` values (``TOPIC=`` removed): what an output must
    not overwrite."""
    return [split_input(text)[1] for text in inputs]


# --- the command line --------------------------------------------------------------------------------

KEY_FORMAT_HELP = ("how the text of a kcat or console capture's keys is read: json (parse it) or string (the text "
                   "itself); TOPIC=FORMAT for one topology topic (repeatable). Default: string, but json for "
                   "left when an fk_join or global_table_join extractor reads a field of the key; json for every "
                   "topic of a topology graph (one JSON serde)")
VALUE_FORMAT_HELP = ("how the text of a kcat or console capture's values is read: json (parse it) or string; "
                     "TOPIC=FORMAT for one topology topic (repeatable). Default: per topic, json when the "
                     "topology reads into values (left of an fk_join or global_table_join whose extractor reads "
                     "a value field; a topic aggregated by sum), else string (joiners, count, list, string_adder, "
                     "string_reduce take values as they are); the output topic (diff): string for the concat "
                     "joiner and string aggregations, else json; json for every topic of a topology graph. JSONL "
                     "and Parquet record files already hold JSON values: the two options do not apply to them")


def add_capture_options(parser) -> None:
    """The capture-reading options (``kssim replay``, ``kssim diff``) on an argparse parser."""
    group = parser.add_argument_group("reading captures")
    group.add_argument("--input-format", choices=[f.value for f in InputFormat], default="auto",
                       help="auto (default: recognised from each file's first line, or Parquet's magic bytes), "
                            "kcat (kcat -C -J lines), console (kafka-console-consumer text printed with "
                            "print.timestamp=true and print.key=true), jsonl or parquet (kssim record files)")
    group.add_argument("--key-format", action="append", default=[], metavar="[TOPIC=]json|string",
                       help=KEY_FORMAT_HELP)
    group.add_argument("--value-format", action="append", default=[], metavar="[TOPIC=]json|string",
                       help=VALUE_FORMAT_HELP)
    group.add_argument("--topic", action="append", default=[], metavar="TOPOLOGY_TOPIC=CAPTURED",
                       help="read the captured topic CAPTURED as the topology's topic (left, right, input; "
                            "output: what diff compares, skipped when reading inputs; a topology graph's source "
                            "and sink topics by their names), e.g. --topic left=orders; repeatable. Unmapped "
                            "topology topics keep their names")
    group.add_argument("--ignore-topic", action="append", default=[], metavar="NAME",
                       help="skip the records of captured topic NAME (counted in the summary); repeatable. "
                            "Records of any other topic the topology does not read are an error")
    group.add_argument("--console-key-separator", default="\\t", metavar="SEP",
                       help="the key.separator a console capture was made with (default: tab; \\t is a tab): "
                            "kafka-console-consumer separates every printed field with it")
    group.add_argument("--console-headers", action="store_true",
                       help="the console capture was made with print.headers=true (needed only when its first "
                            "record has headers: NO_HEADERS is recognised)")


def _unescape(text: str) -> str:
    return text.replace("\\t", "\t").replace("\\n", "\n")


def _formats(option: str, values) -> Dict[str, TextFormat]:
    formats = {}
    for text in values or ():
        topic, sep, name = text.rpartition("=")
        topic = topic if sep else ALL_TOPICS
        try:
            formats[topic] = TextFormat(name)
        except ValueError:
            raise KssimError(f"{option} {text}: expected json or string (or TOPIC=json, TOPIC=string)") from None
    return formats


def capture_options_from(args) -> CaptureOptions:
    """:class:`CaptureOptions` from parsed :func:`add_capture_options` arguments (KssimError on
    a malformed ``--topic`` or format)."""
    topics = {}
    for text in getattr(args, "topic", None) or []:
        name, sep, captured = text.partition("=")
        if not sep or not name or not captured:
            raise KssimError(f"--topic {text}: expected TOPOLOGY_TOPIC=CAPTURED_TOPIC, e.g. --topic left=orders")
        if name in topics:
            raise KssimError(f"--topic {text}: topic {name} is already mapped to {topics[name]}")
        topics[name] = captured
    separator = getattr(args, "console_key_separator", None)
    if separator == "":  # kafka-console-consumer prints its fields apart: an empty separator could not split them
        raise KssimError("--console-key-separator '': the separator cannot be empty (the default is a tab, \\t)")
    separator = _unescape(separator or "\t")
    return CaptureOptions(
        input_format=InputFormat(getattr(args, "input_format", None) or "auto"),
        key_format=_formats("--key-format", getattr(args, "key_format", None)),
        value_format=_formats("--value-format", getattr(args, "value_format", None)),
        topics=topics, ignore_topics=frozenset(getattr(args, "ignore_topic", None) or ()),
        console_key_separator=separator, console_headers=bool(getattr(args, "console_headers", False)))
