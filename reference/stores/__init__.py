"""The reference engine's state stores, one structure per module, each method's cost in its
docstring: window stores (RocksDB segments, in-memory), session stores (``session_store``), the
outer-join store, key-value and versioned key-value stores, and the stream-table grace buffer."""
