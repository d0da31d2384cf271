"""Replay captured record files through a topology on the reference engine, into one output file.

``replay(scenario, inputs, output)``: the scenario supplies topology, release and run config (its
inputs are not used); ``inputs`` are JSONL or Parquet record files (``reference.model.record_files``);
``output`` is a ``.jsonl`` or ``.parquet`` file with the records of ``kssim run --format jsonl``.
The output path is checked before any work (it must not be an input, its folder must exist) and
written atomically: if the run stops on an error or Ctrl-C, nothing partial is left and an existing
file is untouched. If Kafka Streams would fail, the output holds what was emitted before the
failing input and the summary names it.
"""
from __future__ import annotations

from typing import Sequence

from reference.model.record_files import ReplaySummary, check_output_path, open_output, read_record_files
from reference.model.render import sends_old_values
from reference.model.topology import OPERATOR_INPUT_TOPICS, key_extractor_of
from reference.runtime.engine import run_records


def replay(scenario, inputs: Sequence, output) -> ReplaySummary:
    """Run the rows of ``inputs`` through ``scenario``'s topology, write the outputs to
    ``output``; returns the counts (outputs written, drops per reason) and the failure."""
    check_output_path(output, inputs)
    # every row is read and checked before the run: a bad row is reported before any output
    records = read_record_files(inputs, OPERATOR_INPUT_TOPICS[scenario.topology.operator], scenario.config.partitions,
                                offsets_matter=scenario.config.order == "timestamp_sync",
                                extractor=key_extractor_of(scenario.topology))
    with open_output(output, sends_old_values(scenario)) as writer:
        result = run_records(scenario.topology, scenario.profile, scenario.config, records, on_output=writer.write)
    drops = {}
    for drop in result.drops:
        drops[drop.reason.code] = drops.get(drop.reason.code, 0) + 1
    return ReplaySummary(writer.count, drops, result.failure)
