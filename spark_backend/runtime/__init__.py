"""The Spark backend's runtime: scenarios and record files as DataFrames, processing order,
running aggregates in blocks, joined values and writers, the batch runner and the replay."""
