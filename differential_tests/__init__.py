"""Differential testing: generate changelogs, run them through two engine configurations, report
the first divergence and shrink it to a minimal scenario file.

Four rooms, one currency (the scenario document, format 1):
- :mod:`.strategies`: Hypothesis strategies that produce the hard cases on purpose (random
  topology graphs: :mod:`.graph_strategies`);
- :mod:`.engines`: engine configurations (``reference@3.6``, ``spark@3.9``) that run batches;
- :mod:`.divergence`: the first differing record between two runs;
- :mod:`.shrink`: delta debugging over a scenario, batched so a Spark engine runs few jobs (a
  graph's edits: :mod:`.graph_shrink`).
"""
