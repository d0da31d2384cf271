"""The README works as written: every ```console block of README.md is run as a user in a clone
runs it (the installed ``kssim`` entry point, from the repository root, through ``bash`` so pipes
and ``cat`` work; ``$ cd DIR`` moves the following commands of its block), and what each command
prints (stdout and stderr together) must match what the README shows under it.

How shown output matches real output (one rule, kept here):

- a shown line that is ``...`` alone (indentation allowed) stands for any number of real lines,
  none included; elsewhere, shown lines are consecutive real lines, the first shown line is the
  first real line and the last the last, unless a ``...`` line comes before or after it;
- ``...`` inside a shown line stands for any text: the pieces around it must appear in the real
  line in order, the first piece as its prefix and the last as its suffix (a line ending in
  ``...`` is matched by its beginning);
- every other character is compared exactly, except durations, which change from run to run:
  ``7.5s`` matches any ``N.Ns`` and ``900 cases/min`` any rate; blank lines at the end of the real
  output (``kssim describe`` ends with one, as Kafka's ``Topology#describe()`` does) are not shown.

Commands run in a copy of the repository's ``scenarios/`` and ``docs/`` (a temporary folder), so
the files they write (``-o out.jsonl``, difftest's shrunk cases) never land in the checkout.

A block that is not run says so and why on the line before its fence:
``<!-- readme-tour: not run: REASON -->``; only blocks with a Spark command may (a Spark session
takes a JVM and tens of seconds). ``<!-- readme-tour: file PATH -->`` before a fenced block says
the block shows that file of the repository, byte for byte."""
from __future__ import annotations

import functools
import os
import re
import shlex
import shutil
import subprocess
import sysconfig

import attrs
import pytest

from kssim_testing import ROOT

README = os.path.join(ROOT, "README.md")
#: the folders a README command may read; copied into each block's working folder
USER_FOLDERS = ("scenarios", "docs")
NOT_RUN = re.compile(r"<!-- readme-tour: not run: (?P<reason>.*?) -->")
SHOWS_FILE = re.compile(r"<!-- readme-tour: file (?P<path>\S+) -->")
FENCE = re.compile(r"^```(?P<lang>\S*)\n(?P<body>.*?)^```$", re.S | re.M)
ELLIPSIS = "..."
#: durations and rates differ from run to run: compared by shape
VOLATILE = ((re.compile(r"\b\d+\.\d+s\b"), "<N.N>s"), (re.compile(r"\b[\d,]+ cases/min\b"), "<N> cases/min"))


@attrs.frozen
class Command:
    text: str                  # without the "$ " prompt
    shown: tuple[str, ...]     # the output lines the README shows under it


@attrs.frozen
class Block:
    line: int                  # of the opening fence in README.md
    lang: str
    body: str
    marker: str                # the HTML comment on the line before the fence, or ""

    @property
    def not_run_reason(self) -> str | None:
        found = NOT_RUN.fullmatch(self.marker)
        return found["reason"].strip() if found else None

    @property
    def commands(self) -> tuple[Command, ...]:
        commands, text, shown = [], None, []
        for line in self.body.splitlines():
            if line.startswith("$ "):
                if text is not None:
                    commands.append(Command(text, tuple(shown)))
                text, shown = line[2:], []
            else:
                assert text is not None, f"README.md:{self.line}: output before the first '$ ' command"
                shown.append(line)
        if text is not None:
            commands.append(Command(text, tuple(shown)))
        return tuple(commands)


def readme_blocks() -> list[Block]:
    with open(README, encoding="utf-8") as handle:
        text = handle.read()
    blocks = []
    for fence in FENCE.finditer(text):
        before = text[:fence.start()].rstrip("\n").rsplit("\n", 1)[-1].strip()
        marker = before if before.startswith("<!-- readme-tour:") else ""
        blocks.append(Block(text.count("\n", 0, fence.start()) + 1, fence["lang"], fence["body"], marker))
    return blocks


CONSOLE = [b for b in readme_blocks() if b.lang == "console"]
RUN = [b for b in CONSOLE if b.not_run_reason is None]


# --- matching ------------------------------------------------------------------------------------

def _steady(line: str) -> str:
    for pattern, shape in VOLATILE:
        line = pattern.sub(shape, line)
    return line


def _is_gap(shown: str) -> bool:
    return shown.strip() == ELLIPSIS


def line_matches(shown: str, real: str) -> bool:
    shown, real = _steady(shown), _steady(real)
    if ELLIPSIS not in shown:
        return shown == real
    first, *middle, last = shown.split(ELLIPSIS)
    if len(real) < len(first) + len(last) or not real.startswith(first) or not real.endswith(last):
        return False
    at, end = len(first), len(real) - len(last)
    for piece in middle:
        found = real.find(piece, at, end)
        if found < 0:
            return False
        at = found + len(piece)
    return True


def output_matches(shown: list[str] | tuple[str, ...], real: list[str]) -> bool:
    @functools.cache
    def match(i: int, j: int) -> bool:
        if i == len(shown):
            return j == len(real)
        if _is_gap(shown[i]):
            return any(match(i + 1, k) for k in range(j, len(real) + 1))
        return j < len(real) and line_matches(shown[i], real[j]) and match(i + 1, j + 1)

    return match(0, 0)


def _first_unmatched(shown, real) -> str:
    """For the failure message: the first shown line a greedy walk cannot place."""
    j = 0
    for i, line in enumerate(shown):
        if _is_gap(line):
            continue
        after_gap = i > 0 and _is_gap(shown[i - 1])
        candidates = range(j, len(real)) if after_gap else range(j, min(j + 1, len(real)))
        placed = next((k for k in candidates if line_matches(line, real[k])), None)
        if placed is None:
            return f"shown line {i + 1} not found where expected: {line!r}"
        j = placed + 1
    return "the real output has lines after the last shown one (end the block with '...' to elide them)"


# --- running -------------------------------------------------------------------------------------

def _kssim_bin() -> str:
    scripts = sysconfig.get_path("scripts")
    assert os.path.exists(os.path.join(scripts, "kssim")), f"no kssim entry point in {scripts}: pip install -e ."
    return scripts


def _working_copy(tmp_path) -> str:
    clone = tmp_path / "clone"
    for folder in USER_FOLDERS:
        shutil.copytree(os.path.join(ROOT, folder), clone / folder,
                        ignore=shutil.ignore_patterns("__pycache__"))
    return str(clone)


def run_block(block: Block, clone: str) -> list[tuple[Command, list[str]]]:
    env = dict(os.environ, PATH=_kssim_bin() + os.pathsep + os.environ.get("PATH", ""),
               PYTHONUNBUFFERED="1", PYTHONIOENCODING="utf-8")
    cwd, results = clone, []
    for command in block.commands:
        words = shlex.split(command.text)
        if words[0] == "cd":
            cwd = os.path.join(cwd, words[1])
            assert os.path.isdir(cwd), f"README.md:{block.line}: $ {command.text}: no such folder"
            results.append((command, []))
            continue
        done = subprocess.run(["bash", "-c", command.text], cwd=cwd, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, encoding="utf-8")
        real = done.stdout.splitlines()
        while real and not real[-1].strip():
            real.pop()
        results.append((command, real))
    return results


def _block_id(block: Block) -> str:
    return f"line{block.line}:{block.commands[0].text[:60]}"


@pytest.mark.parametrize("block", RUN, ids=_block_id)
def test_the_console_block_prints_what_the_readme_shows(block, tmp_path):
    clone = _working_copy(tmp_path)
    for command, real in run_block(block, clone):
        if not output_matches(command.shown, real):
            pytest.fail(f"README.md:{block.line}: $ {command.text}\n{_first_unmatched(command.shown, real)}\n"
                        "--- shown ---\n" + "\n".join(command.shown) + "\n--- real ---\n" + "\n".join(real),
                        pytrace=False)


# --- what the README may leave unrun, and the files it names ---------------------------------------

def test_every_console_block_is_checked_or_says_why_not():
    assert CONSOLE and RUN
    for block in CONSOLE:
        assert block.commands, f"README.md:{block.line}: a console block without a '$ ' command"
        assert not block.marker or block.not_run_reason is not None, \
            f"README.md:{block.line}: unknown marker {block.marker!r}"
        reason = block.not_run_reason
        if reason is not None:
            assert reason, f"README.md:{block.line}: 'not run' needs a reason"
            # reference-engine commands are all checked: only a Spark block may stay unrun
            assert any("--engine spark" in c.text for c in block.commands), \
                f"README.md:{block.line}: only blocks with a Spark command may be left unrun"
    # what is not run, and why, stays visible in the test log
    for block in CONSOLE:
        if block.not_run_reason:
            print(f"README.md:{block.line}: not run ({block.not_run_reason}): "
                  + "; ".join(c.text for c in block.commands))


def test_a_block_that_shows_a_file_shows_it_as_it_is():
    shown = [b for b in readme_blocks() if SHOWS_FILE.fullmatch(b.marker)]
    assert shown, "the README shows the replay example's capture files"
    for block in shown:
        path = SHOWS_FILE.fullmatch(block.marker)["path"]
        with open(os.path.join(ROOT, path), encoding="utf-8") as handle:
            assert handle.read() == block.body, f"README.md:{block.line} differs from {path}"


#: the repository's top-level folders a command's path may start with
REPO_FOLDERS = ("scenarios/", "docs/", "benchmarks/", "spark_backend/", "reference/", "tools/", "tests/")


def test_every_path_a_readme_command_names_is_in_the_repository():
    for block in readme_blocks():
        if block.lang not in ("console", "sh"):
            continue
        lines = [c.text for c in block.commands] if block.lang == "console" else block.body.splitlines()
        for line in lines:
            for word in shlex.split(line, comments=True):
                assert not word.startswith("../"), \
                    f"README.md:{block.line}: {word} lies outside the repository: a user's clone lacks it"
                path = word.split("=", 1)[-1]
                if path.startswith(REPO_FOLDERS) and not os.path.exists(os.path.join(ROOT, path)):
                    # an output the command writes is the only path that may not exist yet
                    assert path.startswith("scenarios/regressions/"), \
                        f"README.md:{block.line}: {path} is not in the repository"


FENCED = re.compile(r"^```.*?^```$", re.S | re.M)
MARKDOWN_LINK = re.compile(r"\]\((?P<target>[^)\s]+)\)")


def _heading_anchors(text: str) -> set[str]:
    """GitHub's anchors: a heading lower-cased, punctuation but '-' and '_' dropped, spaces as '-'."""
    headings = re.findall(r"^#+ (.*)$", FENCED.sub("", text), re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


def test_every_relative_link_of_the_readme_and_the_docs_resolves():
    pages = [README] + [os.path.join(here, name) for folder in ("docs", "scenarios")
                        for here, _, names in os.walk(os.path.join(ROOT, folder))
                        for name in names if name.endswith(".md")]
    for page in pages:
        with open(page, encoding="utf-8") as handle:
            text = handle.read()
        for link in MARKDOWN_LINK.finditer(FENCED.sub("", text)):
            target = link["target"]
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            resolved = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
            where = f"{os.path.relpath(page, ROOT)}: ({target})"
            assert os.path.exists(resolved), f"{where}: no such file"
            if anchor and resolved.endswith(".md"):
                with open(resolved, encoding="utf-8") as handle:
                    assert anchor in _heading_anchors(handle.read()), f"{where}: no such heading"


# --- the matching rule itself ----------------------------------------------------------------------

REAL = ["header", "row 1", "row 2", "row 3", "why: a because b; [KAFKA-1]", "done in 2.3s"]


@pytest.mark.parametrize("shown", [
    ["header", "row 1", "row 2", "row 3", "why: a because b; [KAFKA-1]", "done in 7.5s"],
    ["header", "...", "row 3", "...", "done in 0.1s"],
    ["...", "why: a ... [KAFKA-1]", "..."],
    ["header", "row 1", "..."],
    ["...", "why: a because b; ...", "done in 2.3s"],
    ["..."],
])
def test_the_shown_output_matches_with_its_elisions(shown):
    assert output_matches(shown, REAL)


@pytest.mark.parametrize("shown", [
    ["header", "row 1", "row 2", "row 3", "why: a because b; [KAFKA-2]", "done in 2.3s"],  # a drifted line
    ["header", "row 2", "...", "done in 2.3s"],       # row 1 left out without '...'
    ["header", "...", "row 3"],                       # the real output goes on
    ["...", "row 3", "row 1", "..."],                 # out of order
    ["header", "...", "row 3", "row 4", "..."],       # a line the real output lacks
    ["...", "why: b ... a ...", "..."],               # the pieces of a line out of order
    ["...", "done in 2.3s", ""],                      # a blank line the real output lacks
])
def test_a_drift_from_the_real_output_does_not_match(shown):
    assert not output_matches(shown, REAL)
