"""Windowed aggregations: session windows (KIP-94), time windows (tumbling, hopping), sliding
windows (KIP-450), their emit strategies (KIP-825), and the windowed-table join of seed 003."""
