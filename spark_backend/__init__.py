"""kssim's PySpark backend: the join semantics of ``reference`` per Kafka release, computed
set-based (window functions, joins, and a ``mapInArrow`` replay only where a rule is truly
sequential), many scenarios per job or one topology over large record files.

It shares only the model with the reference engine (``reference.model``: scenarios, keys and
their serialized bytes, release rules and constants, drop and failure codes, joiners), never its
operator logic. Every release rule it reads is a column or variable named as the rule in
``reference.model.profiles.RULES``, so ``grep -rn RULE_NAME reference/ spark_backend/`` finds
both implementations; drops and failures are written as ``reference.model.codes`` codes.

- ``session``: the one SparkSession (local or a cluster);
- ``runtime``: inputs as DataFrames, processing order, outputs, the batch runner and the replay;
- ``joins``: the stream-stream, stream-table and table-table joins and the KTable source;
- ``stores``: per-key replays of store behaviour (the versioned store).
"""
