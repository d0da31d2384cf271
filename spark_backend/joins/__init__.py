"""The Spark backend's join operators (the same families as ``reference.joins``), set-based where
the rules allow; each module's docstring says which rule is computed how, naming each rule as
``reference.model.profiles.RULES`` does (the settings columns carry those names too).

- ``stream_stream``: KStream-KStream inner/left/outer joins (window stores, visibility, matches);
  ``stream_stream_outer``: the 3.1+ outer store and emission scan, replayed per time tracker;
  ``stream_stream_settings``: per-scenario window settings (``join_window_stores``) and rules;
- ``stream_table``: KStream-KTable joins with versioned tables and the KIP-923 grace buffer;
- ``table_table``: KTable-KTable joins; ``table_source``: the KTable source both table joins use
  (and the GlobalKTable's);
- ``global_table``: KStream-GlobalKTable joins (one global store for every task, ``as_listed`` or
  ``bootstrap``); ``global_table_settings``: its per-scenario settings and rules.
"""
