"""Foreign keys and partitions of an FK join, as Spark columns (two Arrow UDFs over the shared model).

- :func:`foreign_key`: the FK the extractor reads from an LHS record, as
  ``reference.model.keys.key_text`` (the key identity both engines share: two FKs are the same FK
  exactly when their texts are equal, as Kafka compares the serialized FK bytes). The extractor is
  the shared model's ``reference.model.topology.extract_key`` (``value[field]``, or the LHS key
  itself / a field of it with KIP-1104's ``BiFunction`` extractor, ``fk_extractor_with_key``), so
  both engines read the same FK from the same record. JSON text cannot tell a string ``"1"`` from a
  number ``1`` in Spark's JSON functions, hence a Python step (LHS rows only; null for a tombstone:
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


def _foreign_keys(keys, values, sources, fields):
    """Arrow UDF body: the FK text of each LHS record (null where ``values`` is null)."""
    import pyarrow as pa

    from kssim.reference.model.keys import key_text
    from kssim.reference.model.topology import KeyExtractorSpec, extract_key

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


def foreign_key(key, value, source, field, with_key):
    """The FK column (``key_text``) of LHS rows whose ``value`` is not null; ``source``/``field``:
    the extractor's columns; ``with_key``: the release has KIP-1104's extractor
    [fk_extractor_with_key] (the loader rejects ``from: key`` before 4.0, so it only confirms)."""
    source = F.when((source == "key") & with_key, F.lit("key")).otherwise(F.lit("value"))
    udf = F.arrow_udf(_foreign_keys, "string")
    return F.when(value.isNotNull(), udf(key, value, source, field))


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
