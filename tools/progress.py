"""Progress bars for long commands (replay: records; check: files; difftest: cases), on stderr only.

:func:`progress_bar` gives a ``tqdm`` bar (count, rate, ETA when the total is known) when stderr
is a terminal and the user did not ask for quiet, else :data:`NO_PROGRESS`, which does nothing:
stdout is never touched, and output piped or captured (scripts, CI, tests) carries no progress
text. :func:`progress_factory` makes the ``progress(total)`` callable the replays take. Both
objects have ``update(n)`` (O(1)) and ``close()``.
"""
from __future__ import annotations

import sys
from typing import Callable, Optional


class NoProgress:
    """A progress bar that shows nothing."""

    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


NO_PROGRESS = NoProgress()


def shows_progress(quiet: bool = False, stream=None) -> bool:
    """Whether a bar would show: not ``quiet`` and ``stream`` (default stderr) is a terminal."""
    stream = sys.stderr if stream is None else stream
    if quiet:
        return False
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream
        return False


def progress_bar(total: Optional[int], unit: str, description: str, quiet: bool = False):
    """A bar counting ``unit`` (``records``, ``files``, ``cases``) towards ``total`` (None:
    unknown, no ETA), or :data:`NO_PROGRESS` when it would not show (:func:`shows_progress`)."""
    if not shows_progress(quiet):
        return NO_PROGRESS
    from tqdm import tqdm

    # leave=False: the bar disappears when done, the command's own summary stays
    return tqdm(total=total, unit=f" {unit}", desc=description, file=sys.stderr, leave=False, unit_scale=True,
                dynamic_ncols=True, mininterval=0.5)


def progress_factory(unit: str, description: str, quiet: bool = False) -> Optional[Callable[..., object]]:
    """``progress(total, description=...) -> bar`` for the replays (one bar per pass over the
    input), or None when no bar would show (so that the replay does not even count for it)."""
    if not shows_progress(quiet):
        return None

    def progress(total, phase: str = description):
        return progress_bar(total, unit, phase, quiet)

    return progress
