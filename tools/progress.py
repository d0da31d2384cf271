"""Progress bars for long commands (replay: records; check: files; difftest: cases; Spark: the
tasks of its jobs), on stderr only.

:func:`progress_bar` gives a ``tqdm`` bar (count, rate, ETA when the total is known) when stderr
is a terminal and the user did not ask for quiet, else :data:`NO_PROGRESS`, which does nothing:
stdout is never touched, and output piped or captured (scripts, CI, tests) carries no progress
text. :func:`progress_factory` makes the ``progress(total)`` callable the replays take. Both
objects have ``update(n)`` (O(1)) and ``close()``. :func:`spark_job_progress` shows, while a
block runs Spark actions, how far their jobs have got (read from Spark's status tracker by a
daemon thread).
"""
from __future__ import annotations

import contextlib
import sys
import threading
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


def progress_bar(total: Optional[int], unit: str, description: str, quiet: bool = False, unit_scale: bool = True):
    """A bar counting ``unit`` (``records``, ``files``, ``cases``) towards ``total`` (None:
    unknown, no ETA), or :data:`NO_PROGRESS` when it would not show (:func:`shows_progress`).
    ``unit_scale``: counts as 1.2M (False: whole numbers, for counts that stay small)."""
    if not shows_progress(quiet):
        return NO_PROGRESS
    from tqdm import tqdm

    # leave=False: the bar disappears when done, the command's own summary stays
    return tqdm(total=total, unit=f" {unit}", desc=description, file=sys.stderr, leave=False, unit_scale=unit_scale,
                dynamic_ncols=True, mininterval=0.5)


def progress_factory(unit: str, description: str, quiet: bool = False) -> Optional[Callable[..., object]]:
    """``progress(total, description=...) -> bar`` for the replays (one bar per pass over the
    input), or None when no bar would show (so that the replay does not even count for it)."""
    if not shows_progress(quiet):
        return None

    def progress(total, phase: str = description):
        return progress_bar(total, unit, phase, quiet)

    return progress


#: seconds between two reads of Spark's job status (each read is a few calls into the JVM per
#: running stage)
SPARK_POLL_SECONDS = 0.5


@contextlib.contextmanager
def spark_job_progress(quiet: bool = False, poll=None, interval: Optional[float] = None):
    """While the block runs: a bar of the tasks of the Spark jobs it starts (``spark 40/64 tasks
    ..., jobs 2/3, stages 5/7``), on stderr when it is a terminal and not ``quiet``, else nothing
    at all (no thread either). The bar shows from the first job, follows the totals Spark knows
    (those of the jobs started so far), and is cleared when the block ends, however it ends.
    ``poll() -> JobTally or None`` (default: ``spark_backend.runtime.job_progress``'s watch of
    this process's Spark, None until it runs); ``interval``: seconds between polls."""
    if not shows_progress(quiet):
        yield
        return
    if poll is None:
        from kssim.spark_backend.runtime.job_progress import watch_when_started

        poll = watch_when_started()
    bar = PolledBar(poll, SPARK_POLL_SECONDS if interval is None else interval)
    bar.start()
    try:
        yield
    finally:
        bar.stop()


class PolledBar:
    """A ``tasks`` bar fed by ``poll()`` (a ``JobTally`` or None) from a daemon thread, every
    ``interval`` seconds and once more when stopped, so its last picture is the final state."""

    #: how long :meth:`stop` waits for a poll in progress (a JVM that hangs must not hang kssim)
    STOP_WAIT_SECONDS = 5.0

    def __init__(self, poll, interval: float):
        self._poll = poll
        self._interval = interval
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kssim-spark-progress", daemon=True)
        self._bar = None

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(self.STOP_WAIT_SECONDS)

    def _run(self) -> None:
        try:
            while not self._stopping.wait(self._interval):
                self._show(self._poll())
            self._show(self._poll())
        except Exception:  # noqa: BLE001 - Spark stopping under us (Ctrl-C, a failed job): no bar is worth a traceback
            pass
        finally:
            if self._bar is not None:
                self._bar.close()

    def _show(self, tally) -> None:
        if tally is None or tally.jobs == 0:
            return  # Spark has not started a job yet
        if self._bar is None:
            self._bar = progress_bar(tally.tasks, "tasks", "spark", unit_scale=False)
        bar = self._bar
        if bar is NO_PROGRESS:  # stderr stopped being a terminal
            return
        bar.total = tally.tasks
        bar.n = tally.tasks_done
        bar.set_postfix_str(f"jobs {tally.jobs_done}/{tally.jobs}, stages {tally.stages_done}/{tally.stages}",
                            refresh=False)
        bar.refresh()
