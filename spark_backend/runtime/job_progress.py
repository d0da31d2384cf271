"""How far the Spark jobs of one command have got: jobs, stages and tasks done of those known,
read from the SparkContext's status tracker (``SparkContext.statusTracker()``, the store Spark's
own console bar and UI read; it exists with the UI off).

:class:`JobWatch` counts the jobs started after it was made. Spark numbers a context's jobs
0, 1, 2, ... as they are submitted, so the watch finds every job by asking for the next number,
even one that started and ended between two polls (the list of active jobs would miss it). A
finished job's figures are read once and kept; only running jobs are asked again. Spark does not
know the jobs an action has yet to start, so the totals are those of the jobs started so far: a
running job counts every stage of its plan (a stage Spark later skips, its shuffle output already
there, counts until the job ends), a finished one the stages and tasks that ran.

The tools' bar (``tools.progress.spark_job_progress``) polls :meth:`JobWatch.poll`; nothing here
writes anything.
"""
from __future__ import annotations

from typing import Dict, List, Optional

import attrs

#: the job states after which Spark's figures for a job no longer change
_ENDED = ("SUCCEEDED", "FAILED")


@attrs.frozen
class JobTally:
    """Done and known jobs, stages and tasks of the jobs a :class:`JobWatch` has seen."""

    jobs_done: int = 0
    jobs: int = 0
    stages_done: int = 0
    stages: int = 0
    tasks_done: int = 0
    tasks: int = 0

    def __add__(self, other: "JobTally") -> "JobTally":
        return JobTally(*(a + b for a, b in zip(attrs.astuple(self), attrs.astuple(other))))


class JobWatch:
    """The jobs of ``context`` (a SparkContext, or anything with ``statusTracker()``) started
    after this watch was made, or all of them (``from_the_start``); :meth:`poll` tallies them."""

    def __init__(self, context, from_the_start: bool = False):
        self._tracker = context.statusTracker()
        self._next = 0 if from_the_start else self._first_unknown_job(self._last_known_job() + 1)
        #: job -> its stages, for jobs running at the last poll, and for ended ones
        self._running: Dict[int, List[int]] = {}
        self._ended: Dict[int, List[int]] = {}
        #: stage -> its last ``SparkStageInfo``, for stages whose figures no longer change (every
        #: task done, or their job ended)
        self._final: Dict[int, object] = {}

    def _last_known_job(self) -> int:
        """The highest job number in the tracker's store (-1: none). The store keeps the last
        ``spark.ui.retainedJobs`` jobs, listed by number; only the last is read (the Java array:
        pyspark's list of it would cost a call to the JVM per job)."""
        known = self._tracker._jtracker.getJobIdsForGroup(None)  # noqa: SLF001
        return known[len(known) - 1] if len(known) else -1

    def _first_unknown_job(self, start: int) -> int:
        """The first job number from ``start`` the tracker knows nothing of, past every active one."""
        top = max(self._tracker.getActiveJobsIds(), default=-1)
        job = start
        while job <= top or self._tracker.getJobInfo(job) is not None:
            job += 1
        return job

    def poll(self) -> JobTally:
        """The tally of every job seen so far (each stage counted once: a later job may list a
        stage an earlier one ran)."""
        start = self._next
        self._next = self._first_unknown_job(start)
        for job in range(start, self._next):
            self._running[job] = []
        for job in list(self._running):
            info = self._tracker.getJobInfo(job)
            if info is None:  # a number Spark used without a job in its store (or already forgotten)
                del self._running[job]
                continue
            self._running[job] = list(info.stageIds)
            if info.status in _ENDED:
                self._ended[job] = self._running.pop(job)
                for stage in self._ended[job]:
                    self._final[stage] = self._stage(stage)
        pending = {stage for stages in self._running.values() for stage in stages}
        ended = {stage for stages in self._ended.values() for stage in stages} - pending
        tally = JobTally(jobs_done=len(self._ended), jobs=len(self._ended) + len(self._running))
        return sum((_running_stage(self._stage(s)) for s in sorted(pending)), tally) + \
            sum((_ended_stage(self._final.get(s)) for s in sorted(ended)), JobTally())

    def _stage(self, stage: int):
        """The stage's ``SparkStageInfo`` (None: not in the store yet), read until it is final."""
        if stage in self._final:
            return self._final[stage]
        info = self._tracker.getStageInfo(stage)
        if info is not None and 0 < info.numTasks <= info.numCompletedTasks:
            self._final[stage] = info
        return info


def _running_stage(info) -> JobTally:
    """A stage of a running job: all its tasks count (a stage not in the store yet: none known)."""
    if info is None:
        return JobTally(stages=1)
    done = min(info.numCompletedTasks, info.numTasks)
    return JobTally(stages_done=int(0 < info.numTasks <= done), stages=1, tasks_done=done, tasks=info.numTasks)


def _ended_stage(info) -> JobTally:
    """A stage of an ended job: counted if it ran (a skipped stage ran no task)."""
    if info is None or info.numCompletedTasks == 0:
        return JobTally()
    return JobTally(stages_done=1, stages=1, tasks_done=info.numCompletedTasks, tasks=info.numCompletedTasks)


def active_context():
    """The SparkContext of this process, or None when Spark has not started (yet)."""
    import sys

    if "pyspark" not in sys.modules:  # the command has not imported Spark yet
        return None
    from pyspark import SparkContext

    context = SparkContext._active_spark_context
    # the context is registered before its JVM side exists (``_jsc``): not started until then
    return context if context is not None and getattr(context, "_jsc", None) is not None else None


def watch_when_started(context_of=active_context):
    """``poll() -> JobTally or None``: None until Spark runs in this process, then the tally of
    the jobs started after the first poll (every job of the context if Spark started after it)."""
    state = {"watch": None, "started_before": None}

    def poll() -> Optional[JobTally]:
        context = context_of()
        if state["started_before"] is None:
            state["started_before"] = context is not None
        if context is None:
            return None
        if state["watch"] is None:
            state["watch"] = JobWatch(context, from_the_start=not state["started_before"])
        return state["watch"].poll()

    return poll
