"""``KTable#suppress`` (KIP-328, 2.1+) on the Spark backend: a stage after the operator.

Suppress is a pure function of the operator's results per (scenario, task), in the order the
operator forwarded them (``KTableSuppressProcessorSupplier`` sits right after it in the task), so
it runs on the operator's events, independent of the reference engine (it shares only the model:
``reference.model.suppression``'s plan, key bytes and size estimate). Stages, one module each:

- :mod:`.settings`: the plan per scenario as config columns (``suppression_plan``), and which
  scenarios are set-based and which need the sequential pass;
- :mod:`.stage`: the runner's hook: the operator asked for old values (2.3+,
  ``suppress_enables_old_values``), then its events replaced by the suppressed ones;
- :mod:`.changes`: the changes in order per task, with the stream time at each;
- :mod:`.time_eviction` (+ :mod:`.episodes`): unbounded buffers, set-based: where each entry's
  buffer time is passed by the expiry (stream time - wait), and which change is forwarded then;
- :mod:`.bounded`: bounded buffers (and a negative wait): a sequential pass per task.
"""
