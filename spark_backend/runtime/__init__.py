"""The Spark backend's runtime, the part every operator shares:

- ``inputs``: scenarios -> the ``records`` frame (keys as ``reference.model.keys.key_text``) and
  the ``configs`` frame (topology settings and release rules, columns named as the rules);
- ``record_files``: JSONL / Parquet record files -> the same ``records`` frame, numbered and
  checked in parallel, keys rewritten to their ``key_text``;
- ``processing_order``: the order each task processes its records (``partition_choice_*``);
- ``prefix_scan``: running aggregates over a task's order in parallel blocks;
- ``outputs``: events, joined values, output records and the JSONL / Parquet writers;
- ``runner``: a batch of scenarios in one job, drop and failure codes turned into
  ``reference.model.codes`` members; ``replay``: one topology over record files (``spark-submit``-able);
- ``job_progress``: how far a command's Spark jobs have got (the tools' Spark bar reads it).
"""
