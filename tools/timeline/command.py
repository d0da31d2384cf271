"""``kssim timeline FILE [-o OUT] [--release X]``: check the output path, load the scenario
(at another release if asked), build its timeline, draw it and write it atomically."""
from __future__ import annotations

import os
from typing import Optional

from kssim.reference.model.errors import KssimError
from kssim.reference.model.record_files import OutputPathError, atomic_path, check_output_path
from kssim.reference.model.scenario import load_scenario

#: what ``-o`` may end with: the drawing's formats
SUFFIXES = (".png", ".svg", ".html")


def default_output(file) -> str:
    """``<file name without extension>.timeline.png`` in the current folder (the scenario's own
    folder may be read-only, e.g. a shared conformance suite)."""
    return os.path.splitext(os.path.basename(os.fspath(file)))[0] + ".timeline.png"


def write_timeline(file, output=None, release: Optional[str] = None, dpi: int = 110) -> str:
    """Draw the timeline of scenario ``file`` into ``output`` (``.png``, ``.svg`` or ``.html``;
    default :func:`default_output`); returns the path written. The output is checked before any
    work (never the scenario itself, an existing folder, a known extension) and replaced only by
    a complete picture."""
    from kssim.tools.timeline.draw import render  # matplotlib loads only when a picture is drawn
    from kssim.tools.timeline.model import build_timeline

    if os.path.isdir(file):
        raise KssimError(f"{file} is a folder: kssim timeline draws one scenario file")
    output = os.fspath(output) if output is not None else default_output(file)
    try:
        fmt = check_output_path(output, [file], suffixes=SUFFIXES)
    except OutputPathError as exc:  # its text speaks of captures (kssim replay's inputs)
        raise OutputPathError(str(exc).replace("refusing to overwrite a capture", "refusing to overwrite the scenario")) \
            from None
    data = render(build_timeline(load_scenario(file, release)), fmt, dpi=dpi)
    with atomic_path(output) as temp:
        with open(temp, "wb") as handle:
            handle.write(data)
    return output
