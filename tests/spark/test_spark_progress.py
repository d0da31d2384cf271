"""The Spark bar: how far a command's Spark jobs have got (jobs, stages, tasks), read from Spark's
status tracker by a daemon thread and drawn on stderr only when it is a terminal; ``--quiet`` and
a pipe get nothing."""
from __future__ import annotations

import os
import re
import shutil
import threading

from pyspark import SparkJobInfo, SparkStageInfo

from kssim_testing import ROOT, FakeTerminal

from kssim.spark_backend.runtime.job_progress import JobTally, JobWatch, active_context, watch_when_started
from kssim.tools.cli import main
from kssim.tools.progress import spark_job_progress

SMALL = os.path.join(ROOT, "scenarios", "cookbook", "04-table-update-no-trigger-3.9.yaml")
GRAPH = os.path.join(ROOT, "scenarios", "cookbook", "13-orders-per-customer-3.9.yaml")
#: one picture of the bar: ``spark: ...| 5/6 [00:01<00:00, 4.1 tasks/s, jobs 0/1, stages 1/2]``
PICTURE = re.compile(r"spark:[^|]*\|[^|]*\| *(\d+)/(\d+) \[[^\]]*tasks/s, jobs (\d+)/(\d+), stages (\d+)/(\d+)\]")


def pictures(text):
    """Each picture of the bar as (tasks done, tasks, jobs done, jobs, stages done, stages)."""
    return [tuple(int(n) for n in m.groups()) for m in PICTURE.finditer(text)]


# --- the tally, on a scripted status tracker ------------------------------------------------------

class FakeTracker:
    """Spark's status tracker as pyspark shows it, with jobs and stages a test sets."""

    def __init__(self):
        self.jobs = {}  # job -> (stage ids, status)
        self.stages = {}  # stage -> (tasks, completed)
        self._jtracker = self

    def getJobIdsForGroup(self, group):
        return sorted(self.jobs)

    def getActiveJobsIds(self):
        return sorted(j for j, (_, status) in self.jobs.items() if status == "RUNNING")

    def getJobInfo(self, job):
        if job not in self.jobs:
            return None
        stages, status = self.jobs[job]
        return SparkJobInfo(job, list(stages), status)

    def getStageInfo(self, stage):
        if stage not in self.stages:
            return None
        tasks, completed = self.stages[stage]
        return SparkStageInfo(stage, 0, f"stage {stage}", tasks, 0, completed, 0)


class FakeContext:
    def __init__(self, tracker):
        self.tracker = tracker

    def statusTracker(self):
        return self.tracker


def test_the_watch_counts_the_jobs_started_after_it_each_stage_once():
    tracker = FakeTracker()
    tracker.jobs[0] = ([0], "SUCCEEDED")  # before the watch: not ours
    tracker.stages[0] = (3, 3)
    watch = JobWatch(FakeContext(tracker))
    assert watch.poll() == JobTally()
    tracker.jobs[1] = ([1, 2], "RUNNING")  # stage 2 not in the store yet
    tracker.stages[1] = (4, 1)
    assert watch.poll() == JobTally(jobs=1, stages=2, tasks_done=1, tasks=4)
    tracker.stages[1] = (4, 4)
    tracker.stages[2] = (2, 1)
    assert watch.poll() == JobTally(jobs=1, stages_done=1, stages=2, tasks_done=5, tasks=6)
    tracker.stages[2] = (2, 2)
    tracker.jobs[1] = ([1, 2], "SUCCEEDED")
    # job 2 starts and ends between two polls; it lists stage 1 again (its shuffle output reused:
    # skipped) and runs stage 3
    tracker.jobs[2] = ([1, 3], "SUCCEEDED")
    tracker.stages[3] = (2, 2)
    assert watch.poll() == JobTally(jobs_done=2, jobs=2, stages_done=3, stages=3, tasks_done=8, tasks=8)
    # a running job's stage that Spark will skip counts until the job ends
    tracker.jobs[3] = ([4, 5], "RUNNING")
    tracker.stages[4] = (5, 0)
    tracker.stages[5] = (1, 0)
    assert watch.poll() == JobTally(jobs_done=2, jobs=3, stages_done=3, stages=5, tasks_done=8, tasks=14)
    tracker.stages[5] = (1, 1)
    tracker.jobs[3] = ([4, 5], "SUCCEEDED")
    assert watch.poll() == JobTally(jobs_done=3, jobs=3, stages_done=4, stages=4, tasks_done=9, tasks=9)


def test_a_watch_made_before_spark_started_counts_every_job():
    tracker = FakeTracker()
    context = {"now": None}
    poll = watch_when_started(lambda: context["now"])
    assert poll() is None
    context["now"] = FakeContext(tracker)
    tracker.jobs[0] = ([0], "SUCCEEDED")
    tracker.stages[0] = (2, 2)
    assert poll() == JobTally(jobs_done=1, jobs=1, stages_done=1, stages=1, tasks_done=2, tasks=2)


def test_a_context_still_starting_is_not_watched_yet(monkeypatch):
    from pyspark import SparkContext

    class Starting:  # registered as the active context before its JVM side exists
        _jsc = None

    monkeypatch.setattr(SparkContext, "_active_spark_context", Starting())
    assert active_context() is None
    assert watch_when_started()() is None


# --- the bar, fed by a scripted poll --------------------------------------------------------------

def scripted(tallies):
    """``(poll, done)``: poll returns ``tallies`` one by one, then the last one for ever; ``done``
    is set once every one of them was returned."""
    done = threading.Event()
    left = list(tallies)

    def poll():
        tally = left.pop(0) if len(left) > 1 else left[0]
        if len(left) == 1:
            done.set()
        return tally

    return poll, done


def test_the_bar_advances_and_ends_on_a_terminal(monkeypatch):
    terminal = FakeTerminal()
    monkeypatch.setattr("sys.stderr", terminal)
    poll, done = scripted([None, JobTally(jobs=1, stages=2, tasks=4),
                           JobTally(jobs=1, stages_done=1, stages=2, tasks_done=4, tasks=6),
                           JobTally(jobs_done=2, jobs=2, stages_done=3, stages=3, tasks_done=8, tasks=8)])
    with spark_job_progress(poll=poll, interval=0.001):
        assert done.wait(60)
    shown = pictures(terminal.text)
    assert shown[0] == (0, 4, 0, 1, 0, 2)
    assert (4, 6, 0, 1, 1, 2) in shown
    assert shown[-1] == (8, 8, 2, 2, 3, 3)
    # cleared when done: nothing but blanks and carriage returns after the last picture
    tail = terminal.text[terminal.text.rindex("stages 3/3]") + len("stages 3/3]"):]
    assert tail.strip(" \r\x1b[A") == ""


def test_no_bar_and_no_thread_when_quiet_or_not_a_terminal(monkeypatch, capsys):
    def poll():
        raise AssertionError("polled although no bar shows")

    terminal = FakeTerminal()
    monkeypatch.setattr("sys.stderr", terminal)
    with spark_job_progress(quiet=True, poll=poll, interval=0.001):
        pass
    assert terminal.text == ""
    monkeypatch.undo()
    with spark_job_progress(poll=poll, interval=0.001):  # stderr captured by pytest: not a terminal
        pass
    assert capsys.readouterr().err == ""


def test_a_failing_poll_ends_the_bar_quietly(monkeypatch):
    terminal = FakeTerminal()
    monkeypatch.setattr("sys.stderr", terminal)
    polled = threading.Event()

    def poll():
        polled.set()
        raise RuntimeError("the JVM went away")

    with spark_job_progress(poll=poll, interval=0.001):
        assert polled.wait(60)
    assert terminal.text == ""


# --- the commands ---------------------------------------------------------------------------------

def test_check_on_spark_shows_its_jobs_on_a_terminal_unless_quiet(spark, monkeypatch, capsys):
    terminal = FakeTerminal()
    monkeypatch.setattr("sys.stderr", terminal)
    assert main(["check", "--engine", "spark", GRAPH]) == 0
    shown = pictures(terminal.text)
    assert shown, terminal.text
    done = [p[0] for p in shown]
    assert done == sorted(done)  # tasks done never go back
    tasks_done, tasks, jobs_done, jobs, stages_done, stages = shown[-1]
    assert tasks_done == tasks > 0 and jobs_done == jobs > 0 and stages_done == stages > 0
    quiet = FakeTerminal()
    monkeypatch.setattr("sys.stderr", quiet)
    assert main(["check", "--engine", "spark", "--quiet", GRAPH]) == 0
    assert quiet.text == ""
    assert "1 passed" in capsys.readouterr().out


def test_run_check_replay_and_diff_on_spark_print_nothing_on_stderr_when_it_is_not_a_terminal(spark, tmp_path, capsys):
    assert main(["run", "--engine", "spark", SMALL]) == 0
    assert main(["check", "--engine", "spark", GRAPH]) == 0
    topology = shutil.copy(SMALL, tmp_path / "topology.yaml")
    capture = tmp_path / "left.jsonl"
    capture.write_text('{"topic": "left", "key": "a", "value": 1, "ts": 1}\n'
                       '{"topic": "right", "key": "a", "value": 2, "ts": 2}\n')
    output = tmp_path / "out.jsonl"
    assert main(["replay", "--engine", "spark", str(topology), "-i", str(capture), "-o", str(output)]) == 0
    assert main(["diff", "--engine", "spark", str(topology), "-i", str(capture), "-e", str(output)]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    assert "replayed" in captured.out and "1 passed" in captured.out and "\"value\":\"1-null\"" in output.read_text()
