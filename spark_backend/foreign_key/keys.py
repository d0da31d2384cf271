"""Foreign keys and partitions of an FK join, as Spark columns (two Arrow UDFs over the shared model).

- :func:`foreign_key`: the FK the extractor reads from an LHS record, as
  ``reference.model.keys.key_text`` (the key identity both engines share: two FKs are the same FK
  exactly when their texts are equal, as Kafka compares the serialized FK bytes). The extractor is
  the shared model's ``reference.model.topology.extract_key`` (``value[field]``, or the LHS key
  itself / a field of it with KIP-1104's ``BiFunction`` extractor, ``fk_extractor_with_key``), so
  both engines read the same FK from the same record. JSON text cannot tell a string ``"1"`` from a
  number ``1`` in Spark's JSON functions, so the FK is cut out of the value's text where that is
  exact (:func:`_native_foreign_key`: a value extractor whose member is a simple scalar, the
  common case) and read by a Python step for the other rows (LHS rows only; null for a tombstone:
  Kafka never extracts from a null value).
- :func:`partition_of`: Kafka's default partitioner (``reference.model.keys.partition_for``:
  murmur2 over the serialized key, positive, modulo the partition count) for a key column holding
  ``key_text``. Subscriptions go to the partition of their FK, and before 3.3 responses to the
  partition of their PK (``fk_response_to_primary_partition``). Batches whose FK scenarios all
  have one partition never call it (``settings.Features.partitioned``): every partition is 0.
"""
from __future__ import annotations

import json

from pyspark.sql import functions as F

from kssim.spark_backend.runtime.outputs import SIMPLE_JSON


def _foreign_keys(keys, values, sources, fields):
    """Arrow UDF body: the FK text of each LHS record (null where ``values`` is null)."""
    import pyarrow as pa

    from kssim.reference.model.keys import key_text
    from kssim.reference.model.topology import KeyExtractorSpec, extract_key

    if values.null_count == len(values):  # every row read natively (or a tombstone)
        return pa.nulls(len(values), pa.string())
    out = []
    extractors = {}
    for key, value, source, field in zip(keys.to_pylist(), values.to_pylist(), sources.to_pylist(),
                                         fields.to_pylist()):
        if value is None:
            out.append(None)
            continue
        extractor = extractors.get((source, field))
        if extractor is None:
            extractor = extractors[(source, field)] = KeyExtractorSpec(source=source, field=field)
        fk = extract_key(extractor, None if key is None else json.loads(key), json.loads(value))
        out.append(key_text(fk))
    return pa.array(out, pa.string())


#: a member value whose text is its ``key_text`` (``outputs.SIMPLE_JSON``'s scalars, and ``null``)
_SCALAR = r'("[^"\\\x00-\x1f]*"|0|-?[1-9][0-9]*|true|false|null)'
#: a member name that JSON writes as it is, between quotes (no escape)
_PLAIN_NAME = r'^[^"\\\x00-\x1f]*$'


def _native_foreign_key(value, field):
    """``(exact, fk)``: the FK of a value extractor cut out of the value's text, and where it is
    exactly ``key_text(extract_key(...))``. Exact where the text has no backslash (no escape: every
    quote delimits a string, every member name is spelled as it is), the field's name occurs once
    (Python keeps the last of duplicate members), and the member is found by one regular
    expression: ``"field":`` right after the opening brace or a comma with no ``{`` before it
    (so a member of the top object: a name is a quoted string followed by a colon) holding a
    simple scalar, whose text is its ``key_text`` (a JSON ``null``: a null FK). A whole-value
    extractor (no field) is exact where the value is such a scalar. Anything else (a float, an
    object, an escape, spaces) is left to the Python step."""
    label = F.concat(F.lit('"'), field, F.lit('":'))
    pattern = F.concat(F.lit(r'^\{(?:[^{]*?,)?\Q"'), field, F.lit(r'"\E:' + _SCALAR + '[,}]'))
    # "" where it does not match (a match is never ""); a pattern per scenario (its field)
    member = F.call_function("regexp_extract", value, pattern, F.lit(1))
    once = F.call_function("locate", label, value, F.call_function("instr", value, label) + 1) == 0
    plain = ~value.contains("\\") & field.rlike(_PLAIN_NAME)
    of_field = plain & (member != "") & once
    whole = value.rlike(SIMPLE_JSON)
    exact = F.when(field.isNull(), whole).otherwise(F.coalesce(of_field, F.lit(False)))
    fk = F.when(field.isNull(), value).otherwise(F.nullif(member, F.lit("null")))
    return exact, fk


def foreign_key(key, value, source, field, with_key):
    """The FK column (``key_text``) of LHS rows whose ``value`` is not null; ``source``/``field``:
    the extractor's columns; ``with_key``: the release has KIP-1104's extractor
    [fk_extractor_with_key] (the loader rejects ``from: key`` before 4.0, so it only confirms).
    Natively where :func:`_native_foreign_key` is exact; the Arrow UDF gets the other rows only
    (a UDF is evaluated on every row, whatever CASE surrounds it: the native rows pass it nulls)."""
    source = F.when((source == "key") & with_key, F.lit("key")).otherwise(F.lit("value"))
    exact, native = _native_foreign_key(value, field)
    exact = (source == "value") & value.isNotNull() & exact
    udf = F.arrow_udf(_foreign_keys, "string")
    python = udf(*[F.when(~exact, column) for column in (key, value, source, field)])
    return F.when(value.isNotNull(), F.when(exact, native).otherwise(python))


def _partitions(keys, counts):
    """Arrow UDF body: ``partition_for(key, count)`` (0 for a null key or one partition)."""
    import pyarrow as pa

    from kssim.reference.model.keys import partition_for

    out = []
    for key, count in zip(keys.to_pylist(), counts.to_pylist()):
        out.append(0 if key is None or count is None or count <= 1 else partition_for(json.loads(key), count))
    return pa.array(out, pa.int32())


def partition_of(key, count, partitioned: bool):
    """Kafka's default partition of a ``key_text`` column among ``count`` partitions; without
    ``partitioned`` (no FK scenario of the batch has several partitions) the constant 0."""
    if not partitioned:
        return F.lit(0)
    return F.when(count > 1, F.arrow_udf(_partitions, "int")(key, count)).otherwise(F.lit(0))
