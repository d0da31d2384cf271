"""Small frames of settings rows that Spark holds on the driver (a ``LocalRelation``).

``SparkSession.createDataFrame`` of Python rows parallelizes them as an RDD, so every broadcast
join with such a frame first runs a Spark job to collect it back (0.1 to 1 s each, and a graph
level has several). A frame written as an inline ``VALUES`` table is a ``LocalRelation``: the
optimizer folds it, and broadcasting it runs no job. For small frames only (settings: one row per
scenario or per node); the SQL text grows with the rows.

Supported column types: INT, BIGINT, BOOLEAN, STRING, DOUBLE and ARRAY<BIGINT> (what settings
use); strings are written as hexadecimal UTF-8 (no quoting rules to get wrong).
"""
from __future__ import annotations

from typing import List, Sequence, Tuple

#: above this many rows a frame is parallelized as usual (SQL text and parsing grow per row)
MAX_LOCAL_ROWS = 5000


def _columns(ddl: str) -> List[Tuple[str, str]]:
    """``"a INT, b ARRAY<BIGINT>"`` → ``[("a", "INT"), ("b", "ARRAY<BIGINT>")]`` (no nested commas
    in the types settings use)."""
    return [tuple(part.strip().split(None, 1)) for part in ddl.split(",")]


def _literal(value, sql_type: str) -> str:
    upper = sql_type.upper()
    if value is None:
        return f"CAST(NULL AS {sql_type})"
    if upper == "STRING":
        return f"CAST(X'{value.encode('utf-8').hex()}' AS STRING)"
    if upper == "BOOLEAN":
        return "TRUE" if value else "FALSE"
    if upper in ("INT", "BIGINT"):
        return f"CAST({int(value)} AS {upper})"
    if upper == "DOUBLE":
        return f"CAST('{float(value)!r}' AS DOUBLE)"
    if upper == "ARRAY<BIGINT>":
        return f"CAST(ARRAY({', '.join(str(int(v)) for v in value)}) AS ARRAY<BIGINT>)" if value \
            else "CAST(ARRAY() AS ARRAY<BIGINT>)"
    raise ValueError(f"local_frame: unsupported column type {sql_type}")


_ARROW_TYPES = {"INT": "int32", "BIGINT": "int64", "BOOLEAN": "bool_", "STRING": "string", "DOUBLE": "float64"}


def _arrow_frame(spark, rows: Sequence[tuple], columns):
    """Many rows: as an Arrow table, not as pickled Python rows that a Python worker converts
    one by one (measured: 1.3 s against 1.6 s for 100k rows of five columns)."""
    import pyarrow as pa

    arrays = {}
    for position, (name, sql_type) in enumerate(columns):
        upper = sql_type.upper()
        kind = pa.list_(pa.int64()) if upper == "ARRAY<BIGINT>" else getattr(pa, _ARROW_TYPES[upper])()
        arrays[name] = pa.array([row[position] for row in rows], kind)
    table = pa.table(arrays)
    ddl = ", ".join(f"`{name}` {sql_type}" for name, sql_type in columns)
    return spark.createDataFrame(table, ddl)


def local_frame(spark, rows: Sequence[tuple], ddl: str):
    """The rows as a frame of schema ``ddl``, held on the driver where they are few (through
    Arrow where they are many)."""
    columns = _columns(ddl)
    if any(_literal_unsupported(t) for _, t in columns):
        return spark.createDataFrame(list(rows), ddl)
    if len(rows) > MAX_LOCAL_ROWS:
        return _arrow_frame(spark, rows, columns)
    names = ", ".join(f"`{name}`" for name, _ in columns)
    if not rows:  # one null row, filtered away: still a (now empty) LocalRelation
        values = "(" + ", ".join(_literal(None, t) for _, t in columns) + ")"
        return spark.sql(f"SELECT * FROM VALUES {values} AS t({names}) WHERE FALSE")
    values = ", ".join("(" + ", ".join(_literal(v, t) for v, (_, t) in zip(row, columns)) + ")" for row in rows)
    return spark.sql(f"SELECT * FROM VALUES {values} AS t({names})")


def _literal_unsupported(sql_type: str) -> bool:
    return sql_type.upper() not in ("INT", "BIGINT", "BOOLEAN", "STRING", "DOUBLE", "ARRAY<BIGINT>")
