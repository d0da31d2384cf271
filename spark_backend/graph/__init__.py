"""Topology graphs on Spark: one stage per plan node, level by level (:mod:`.runner`)."""
