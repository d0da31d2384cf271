"""The Spark backend's replays of store behaviour that is truly sequential per key:
``versioned_store`` (``RocksDBVersionedStore``, ``versioned_tables``: what a put returns as
``isLatest`` and what an as-of lookup finds). The stream-stream join's outer store, sequential per
time tracker, is ``spark_backend.joins.stream_stream_outer``."""
