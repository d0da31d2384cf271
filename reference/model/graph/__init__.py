"""Topology graphs: a small Kafka Streams DSL program as a list of nodes (../shared/spec/topology-graphs.md)."""
