"""Captured topics as records: one streaming reading layer for both engines and ``kssim diff``.

Formats (one module each; :class:`InputFormat`; ``docs/scenario-format.md`` "Capture formats"):

- :mod:`.kcat`: ``kcat -C -J`` lines (topic, partition, offset, tstype, ts, broker, headers, key,
  payload; key and payload are the bytes as text);
- :mod:`.console`: ``kafka-console-consumer`` text printed with ``print.timestamp=true`` and
  ``print.key=true`` (partition, offset, headers recognised); it names no topic: ``--input
  TOPIC=PATH``, else the file's name without extension;
- :mod:`.jsonl`, :mod:`.parquet`: kssim's record files (``reference.model.record_files``: topic,
  partition, offset, ts, key, value; JSON values);
- :mod:`.detect`: ``--input-format auto`` (the default) recognises each file from its first
  non-blank line or Parquet's magic bytes; a folder is its data files in name order, in one format.

Keys and values of kcat and console captures are text, read by ``--key-format`` /
``--value-format`` (:class:`TextFormat`: ``json`` parses it strictly, ``string`` keeps it; for
every topic or per topology topic), defaulting per topic to what the topology needs
(:func:`default_text_formats`). Topics: captured names map
onto the topology's (``--topic left=orders``: :class:`CaptureOptions` ``topics``); records of the
other side (the output topic when reading inputs; the inputs when reading the output) and of
``--ignore-topic`` names are skipped and counted; any other topic is an error naming file, record
and topic.

The API::

    captures = open_captures(inputs, options, topology, partitions, offsets_matter, reading="inputs")
    captures.sources      # [CaptureSource(path, format, topic, count, first_index)], known up front
    captures.total        # records in all files (skipped ones included)
    captures.records()    # Iterator[InputRecord], file order, input indexes from 0
    captures.records_of(source)  # one file's records, numbered from source.first_index (lazy merges)
    captures.ignored      # captured topic -> records skipped so far
    captures.formats      # topology topic -> (key TextFormat, value TextFormat) of kcat/console text
    captures.reopened(offsets_matter=False)  # a second pass, without listing and counting again

``inputs`` are ``--input`` values (files, folders, ``TOPIC=PATH``; :func:`input_paths` gives the
paths an output must not overwrite). Numbering: the records of all files in the order given are
input indexes 0..n-1; a skipped record keeps its number (input N is the N-th captured record).
``reading="output"`` reads the captured output topic for ``kssim diff``: records with topic
``output`` (InputRecords of topic ``output``), or of the graph sink topic ``output_topic`` names
(:func:`chosen_output_topic`: default the only one). A topology's topics are
``reference.model.topology.input_topics`` / ``output_topics``: format 1's ``left``/``right`` or
``input`` and ``output``; a topology graph's source and sink topics (all JSON by default). Records are checked as they are read, by the rules
both engines share (``record_files.check_record``, strict JSON): a bad record is a ScenarioError
naming the file, the line (or Parquet row) and the field; files are streamed (line by line, Arrow
batches), so memory does not grow with the input. Command-line options: :func:`add_capture_options`
and :func:`capture_options_from`.
"""
from kssim.reference.model.captures.options import (CaptureOptions, InputFormat, TextFormat, add_capture_options,
                                              capture_options_from, default_text_formats, input_paths, split_input,
                                              text_formats)
from kssim.reference.model.captures.sources import (Captures, CaptureSource, TopicPlan, chosen_output_topic, list_sources,
                                              open_captures, plan_topics, topology_outputs)

__all__ = ["CaptureOptions", "CaptureSource", "Captures", "InputFormat", "TextFormat", "TopicPlan",
           "add_capture_options", "capture_options_from", "chosen_output_topic", "default_text_formats", "input_paths",
           "list_sources", "open_captures", "plan_topics", "split_input", "text_formats", "topology_outputs"]
