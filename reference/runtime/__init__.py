"""The reference engine's runtime: tasks, processing order, processor contexts, the run loop,
the operator registry and explanations. Operators live in ``reference.joins`` (and, later,
their own packages); their stores in ``reference.stores``."""
