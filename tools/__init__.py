"""The ``kssim`` command line: thin over the reference engine (and, later, the Spark backend)."""
