"""Spark starts quietly: the JVM's standard error reaches the user without the warning Spark 4's
launcher makes it print at every start (``--add-modules jdk.incubator.vector``)."""
from __future__ import annotations

import io
import os
import subprocess
import sys

from kssim_testing import ROOT

from kssim.spark_backend.session import forward_jvm_stderr


def test_the_incubator_warning_is_dropped_and_everything_else_passes():
    jvm = io.BytesIO(b"WARNING: Using incubator modules: jdk.incubator.vector\n"
                     b"Exception in thread main: java.lang.OutOfMemoryError\n"
                     b"WARNING: something else\r\n")
    out = io.StringIO()
    forward_jvm_stderr(jvm, lambda: out)
    assert out.getvalue() == "Exception in thread main: java.lang.OutOfMemoryError\nWARNING: something else\r\n"


def test_a_spark_command_prints_no_jvm_warning(tmp_path):
    scenario = os.path.join(ROOT, "scenarios", "cookbook", "04-table-update-no-trigger-3.9.yaml")
    done = subprocess.run([sys.executable, "-m", "kssim.tools.cli", "check", "--engine", "spark", scenario],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "1 passed" in done.stdout
    assert done.stderr == ""  # no JVM warning, no log4j banner: nothing but kssim's own messages
