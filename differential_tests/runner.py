"""``kssim difftest``: generate cases, run them through two engine configurations in batches,
report the first divergence, shrink it and write it as a regression scenario."""
from __future__ import annotations

import hashlib
import json
import os
import re
import time
from typing import Callable, List, Optional

import attrs
from hypothesis import HealthCheck, Phase, given, seed as hypothesis_seed, settings
from hypothesis.errors import Unsatisfiable

from kssim.reference.model.keys import key_text
from kssim.reference.model.render import show
from kssim.reference.model.profiles import rule_changes

from kssim.differential_tests.divergence import Divergence, code_of, describe_failure, first_divergence, message_of
from kssim.reference.model.errors import KssimError
from kssim.reference.model.scenario import scenario_from_dict

from kssim.differential_tests.engines import EngineConfig, at_release, run_batch, run_with_rules, supports_suppress
from kssim.differential_tests.graph_shrink import is_graph
from kssim.differential_tests.graph_strategies import GRAPH, graph_scenarios, operations_of
from kssim.differential_tests.shrink import shrink
from kssim.differential_tests.strategies import OPERATORS, missing_in, scenarios


def _strategy(operator: str, profiles, suppress: bool):
    """The cases of ``operator``: a format-1 operator's strategy, or random topology graphs
    (:data:`GRAPH`: :mod:`.graph_strategies`, which draw their own suppress nodes)."""
    if operator == GRAPH:
        return graph_scenarios(tuple(profiles))
    return scenarios(operator, tuple(profiles), suppress=suppress)


def draw_cases(operator: str, profiles, count: int, seed: int, suppress: bool = False) -> List[dict]:
    """``count`` scenario documents drawn deterministically (for a given seed) from the strategy
    (``operator`` a format-1 operator or :data:`GRAPH`); ``suppress``: table results may be
    suppressed. An operator a release lacks is an error."""
    missing = missing_in(operator, profiles)
    if missing:
        raise KssimError(f"{operator} does not exist in Kafka {', '.join(missing)}: no case to generate")
    cases: List[dict] = []

    @settings(max_examples=count, database=None, phases=[Phase.generate], deadline=None,
              suppress_health_check=list(HealthCheck))
    @hypothesis_seed(seed)
    @given(_strategy(operator, profiles, suppress))
    def collect(doc):
        cases.append(doc)

    try:
        collect()
    except Unsatisfiable:
        releases = " and ".join(p.release for p in profiles)
        raise KssimError(f"no {operator} scenario is valid in both Kafka {releases} (e.g. a window's grace: "
                         "before 2.1 only the legacy default, from 4.0 only an explicit one)") from None
    for i, doc in enumerate(cases):
        doc["name"] = f"{operator}-seed{seed}-case{i}"
    return cases


@attrs.frozen
class Finding:
    operator: str
    case_index: int
    original: dict
    shrunk: dict
    divergence: Divergence
    report: str
    written_to: Optional[str] = None
    explained_by: tuple = ()


@attrs.frozen
class OperatorRun:
    """One operator's difftest: how many cases ran, how many of them both engines ran (not
    rejected by either: ``compared``), and the findings (shrunk divergences), the first one as
    ``finding``."""

    operator: str
    cases: int
    seconds: float
    finding: Optional[Finding]
    findings: tuple = ()
    compared: int = 0
    #: the first reason an engine gave for not running a case (e.g. an operator it lacks)
    rejected_because: Optional[str] = None


def _still_diverges(a: EngineConfig, b: EngineConfig):
    def predicate(docs):
        # a candidate a release's loader rejects, or either engine refuses, is not a divergence
        valid = [i for i, doc in enumerate(docs) if _valid_in(doc, a.release) and _valid_in(doc, b.release)]
        ra, rb = run_batch(a, [docs[i] for i in valid]), run_batch(b, [docs[i] for i in valid])
        out = [False] * len(docs)
        for i, x, y in zip(valid, ra, rb):
            out[i] = not x.error and not y.error and first_divergence(x, y) is not None
        return out
    return predicate


def _valid_in(doc, release) -> bool:
    try:
        scenario_from_dict(at_release(doc, release))
    except KssimError:
        return False
    return True


def difftest_operator(operator, a: EngineConfig, b: EngineConfig, cases: int, seed: int,
                      batch_size: int = 500, out_dir: Optional[str] = None,
                      max_findings: Optional[int] = None,
                      on_cases: Optional[Callable[[int], None]] = None) -> OperatorRun:
    """Run ``cases`` generated cases through ``a`` and ``b``; shrink divergences into findings.

    Two engines at one release: the first divergence is the finding (``max_findings`` 1; with
    more, further divergences of another symptom, :func:`symptom`, each shrunk to a case not
    shown yet). Two releases: what an upgrade changes is one minimal case per changed rule, so
    the search goes on after a finding until every changed rule has explained one
    (``explained_by``: the changed rules whose name or KIP/JIRA the explanations of the
    differing records cite), a divergence no rule explains has been found, or the cases run out;
    divergences explained by rules already shown are skipped. ``max_findings`` caps the findings
    either way. Cases an engine refuses are counted (``compared`` is the rest). ``on_cases(n)``
    is told after each batch how many more cases ran (a progress bar)."""
    started = time.monotonic()
    suppress = supports_suppress(a, operator) and supports_suppress(b, operator)
    docs = draw_cases(operator, (a.profile, b.profile), cases, seed, suppress)
    changed = rule_changes(a.profile, b.profile) if a.release != b.release else []
    limit = max_findings if max_findings is not None else max(1, len(changed))
    findings: List[Finding] = []
    covered: set = set()
    symptoms: set = set()
    ran = compared = 0
    rejected = None
    for start in range(0, len(docs), batch_size):
        batch = docs[start:start + batch_size]
        results_a, results_b = run_batch(a, batch), run_batch(b, batch)
        for offset, (ra, rb) in enumerate(zip(results_a, results_b)):
            ran = start + offset + 1
            if on_cases is not None:
                on_cases(1)
            if ra.error or rb.error:
                rejected = rejected or f"{a.label if ra.error else b.label}: {ra.error or rb.error}"
                continue
            compared += 1
            div = first_divergence(ra, rb)
            if div is None:
                continue
            original = batch[offset]
            if not changed and symptom(original, div) in symptoms:
                continue  # between engines: shrinking is dear (a Spark job per step); one case per symptom
            if changed and is_graph(original) and _shown_already(original, a, b, rb, covered):
                continue  # between releases: a rule already shown makes all of this difference
            small = shrink(original, _still_diverges(a, b))
            finding = _finding(operator, start + offset, original, small, a, b, seed, changed)
            if changed and findings and (not finding.explained_by or set(finding.explained_by) <= covered):
                continue  # nothing new: a rule already shown (or, after the first, an unexplained repeat)
            if not changed and any(_case_of(f.shrunk) == _case_of(small) for f in findings):
                continue
            covered.update(finding.explained_by)
            symptoms.add(symptom(original, div))
            if out_dir:
                finding = attrs.evolve(finding, written_to=write_regression(finding, a, b, out_dir))
            findings.append(finding)
            if len(findings) >= limit or (changed and covered >= {r.name for r in changed}) \
                    or (changed and not finding.explained_by):
                return OperatorRun(operator, ran, time.monotonic() - started, findings[0], tuple(findings),
                                   compared, rejected)
    return OperatorRun(operator, len(docs), time.monotonic() - started, findings[0] if findings else None,
                       tuple(findings), compared, rejected)


def symptom(doc, div: Divergence) -> tuple:
    """What a divergence looks like, cheaply, before shrinking: its kind (which records, drop or
    failure codes differ) and the topology's and configuration's switches that select code paths
    (emit strategy, suppress, old values, store, several partitions)."""
    kind = div.what.split(":")[0] if div.record_a is None and div.record_b is None else div.what
    codes = tuple(sorted(set(re.findall(r"\b([a-z]+(?:_[a-z]+)+) \(", div.what))))
    topology, config = doc["topology"], doc.get("config", {})
    if is_graph(doc):  # a graph's code paths are its operations (and record caches)
        return (kind, codes, tuple(sorted(set(operations_of(doc)))), bool(config.get("caching")))
    return (kind, codes, topology.get("emit", "on_update"), "suppress" in topology,
            bool(topology.get("send_old_values")), config.get("store", "rocksdb"), bool(config.get("partitions")))


def _case_of(doc) -> str:
    """A shrunk case without its name: two findings that shrink to it are one."""
    return json.dumps({k: v for k, v in doc.items() if k != "name"}, sort_keys=True)


def _finding(operator, index, original, small, a, b, seed, changed=()) -> Finding:
    ra, = run_batch(a, [small], explain=True)
    rb, = run_batch(b, [small], explain=a.engine == "reference" and b.engine == "reference")
    div = first_divergence(ra, rb)
    report = describe(small, div, ra, rb, a, b, seed, index)
    explained = explained_by(report, changed)
    if explained:
        report += "\n  explained by: " + ", ".join(explained)
    elif is_graph(small):
        # graph explanations name processors, not always the rule behind a plan difference (old
        # values a filter gets, a store a source gets): ask the rules themselves
        explained = counterfactual_rules(small, a, b, changed)
        if explained:
            report += ("\n  explained by: " + ", ".join(explained) + f" ({a.release} with only "
                       + ("this rule" if len(explained) == 1 else "one of these rules")
                       + f" as in {b.release} runs as {b.release})")
    return Finding(operator, index, original, small, div, report, explained_by=explained)


def explained_by(report: str, changed) -> tuple:
    """The changed rules a divergence report's explanations cite: by rule name, or, when they
    name none, by a KIP/JIRA ref that only one changed rule has (a ref several rules share,
    KIP-962 or KAFKA-6455 say, cites none of them). The report's own list of the rules that
    differ is not a citation."""
    report = "\n".join(line for line in report.splitlines() if not line.startswith("  rules that differ"))
    # a whole word: suppress_session_close_includes_gap does not cite session_close_includes_gap
    by_name = tuple(rule.name for rule in changed if re.search(rf"(?<!\w){re.escape(rule.name)}(?!\w)", report))
    if by_name:
        return by_name
    refs = {rule.name: re.findall(r"\b(?:KIP|KAFKA)-\d+\b", rule.ref) for rule in changed}
    owners: dict = {}
    for name, rule_refs in refs.items():
        for ref in rule_refs:
            owners.setdefault(ref, set()).add(name)
    # a ref cites a rule only when no other changed rule shares it (KIP-962 names a stream-stream
    # rule and an FK rule: a stream-stream divergence must not be "explained by" the FK one)
    return tuple(rule.name for rule in changed
                 if any(len(owners[ref]) == 1 and re.search(rf"\b{ref}\b", report) for ref in refs[rule.name]))


def counterfactual_rules(doc, a: EngineConfig, b: EngineConfig, changed) -> tuple:
    """The changed rules that alone account for ``doc``'s divergence: ``a``'s release with only
    that rule as in ``b``'s release gives ``b``'s result. Between reference engines only (a rule
    is a switch of the reference engine's profile; another engine is not asked)."""
    if a.engine != "reference" or b.engine != "reference" or not changed:
        return ()
    rb, = run_batch(b, [doc])
    return tuple(rule.name for rule in changed if _runs_as(doc, a, rb, {rule.name: getattr(b.profile, rule.name)}))


def _runs_as(doc, a: EngineConfig, result_b, rules: dict) -> bool:
    """Does ``a`` with ``rules`` changed give ``result_b`` on ``doc``?"""
    flipped = run_with_rules(a, doc, rules)
    return not flipped.error and first_divergence(flipped, result_b) is None


def _shown_already(doc, a: EngineConfig, b: EngineConfig, result_b, covered) -> bool:
    """Before shrinking another graph divergence between two releases: do the rules findings
    have already shown account for all of it (``a`` with them as in ``b`` runs as ``b``)? Then
    shrinking it would show nothing new. Reference engines only (see :func:`counterfactual_rules`)."""
    if not covered or a.engine != "reference" or b.engine != "reference":
        return False
    return _runs_as(doc, a, result_b, {name: getattr(b.profile, name) for name in covered})


def show_key(key) -> str:
    """A key as Kafka tells keys apart: a string as itself unless it reads as another JSON value
    (``"1"``, ``"true"``), anything else as compact JSON in document order (``1.0``, ``true``,
    ``{"b":2,"a":1}``), so two different keys never render alike."""
    if isinstance(key, str):
        try:
            json.loads(key)
        except ValueError:
            return key
    return key_text(key) if key is not None else "null"


def _rec(rec):
    if rec is None:
        return "(nothing)"
    text = f"{show_key(rec.key)}:{show(rec.value)}@{rec.ts} while processing input {rec.input_index}"
    if getattr(rec, "why", None) is not None:
        text += f"\n        because: {rec.why.describe()}"
    return text


def describe(doc, div: Divergence, ra, rb, a, b, seed, index) -> str:
    lines = [f"divergence in {_topology_name(doc)} (case {index} of seed {seed}), "
             f"shrunk to {len(doc['inputs'])} inputs"]
    if is_graph(doc):
        lines.append(f"  graph ({len(doc['topology']['graph'])} nodes):")
        lines += [f"    [{i}] {json.dumps(node)}" for i, node in enumerate(doc["topology"]["graph"])]
    else:
        lines.append(f"  topology: {json.dumps(doc['topology'], sort_keys=True)}")
    lines.append(f"  config:   {json.dumps(doc.get('config', {}), sort_keys=True)}")
    for i, rec in enumerate(doc["inputs"]):
        mark = ">" if i == div.input_index else " "
        lines.append(f"  {mark} input {i}: {rec['topic']}[{rec.get('partition', 0)}] {show_key(rec['key'])}:{show(rec['value'])}@{rec['ts']}")
    lines.append(f"  first difference ({div.what}), partition {div.partition}, output #{div.position}:")
    lines.append(f"    {a.label}: {_rec(div.record_a)}")
    lines.append(f"    {b.label}: {_rec(div.record_b)}")
    for label, res, shown in ((a.label, ra, div.record_a), (b.label, rb, div.record_b)):
        # the rest of what this input made: the rule behind a difference may explain a sibling
        # (a merge's tombstone differs, the merged session's explanation names the close rule)
        for rec in res.outputs:
            if rec.input_index == div.input_index and rec is not shown:
                lines.append(f"    {label} also: {_rec(rec)}")
        if res.failure is not None:
            lines.append(f"    {label}: fails at input {res.failure.input_index}: {describe_failure(res.failure)}")
            if getattr(res.failure, "why", None) is not None:
                lines.append(f"        because: {res.failure.why.describe()}")
        for drop in res.drops:
            if drop.input_index == div.input_index:
                code, message = code_of(drop.reason), message_of(drop.reason)
                text = f"{code}: {message}"
                why = f"; {drop.why.describe()}" if drop.why is not None else ""
                lines.append(f"    {label} dropped input {drop.input_index} ({text}){why}")
    if a.release != b.release:
        changed = rule_changes(a.profile, b.profile)
        if changed:
            lines.append(f"  rules that differ between {a.release} and {b.release}: "
                         + ", ".join(f"{r.name} ({r.ref})" for r in changed))
    return "\n".join(lines)


def _topology_name(doc) -> str:
    return GRAPH if is_graph(doc) else doc["topology"]["operator"]


def write_regression(finding: Finding, a: EngineConfig, b: EngineConfig, out_dir: str) -> str:
    """Write the shrunk case as a scenario whose expectation is engine A's output (the spec side),
    with engine B's output in ``x-notes``; ``kssim check`` then runs it like any scenario."""
    doc = at_release(finding.shrunk, a.release)
    ra, = run_batch(a, [doc])
    rb, = run_batch(b, [doc])
    digest = hashlib.sha1(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:10]
    name = f"{finding.operator}-{a.label}-vs-{b.label}-{digest}".replace("@", "_")
    doc["name"] = name
    doc["description"] = f"Shrunk divergence between {a.label} and {b.label} found by kssim difftest."
    doc["source"] = f"kssim difftest --a {a.label} --b {b.label} (case {finding.case_index})"
    doc["checkpoints"] = list(range(len(doc["inputs"])))
    doc["expected"] = [_as_expected(r) for r in ra.outputs]
    if ra.failure is not None:
        doc["expected_failure"] = {"input": ra.failure.input_index}
    doc["x-notes"] = [f"{b.label} gives: " + json.dumps([_as_expected(r) for r in rb.outputs])
                      + (f"; and fails at input {rb.failure.input_index} ({describe_failure(rb.failure)})"
                         if rb.failure is not None else ""),
                      # outputs may agree while drops differ, which ``expected`` cannot show
                      f"first difference at input {finding.divergence.input_index}: {finding.divergence.what}"]
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, name + ".json")
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(doc, handle, indent=1)
        handle.write("\n")
    return path


def _as_expected(rec) -> dict:
    from kssim.reference.model.records import NO_OLD_VALUE

    out = {"topic": rec.topic, "partition": rec.partition, "key": rec.key, "value": rec.value, "ts": rec.ts,
           "after_input": rec.input_index}
    if rec.old_value is not NO_OLD_VALUE:
        out["old_value"] = rec.old_value
    if rec.partition == 0:
        del out["partition"]
    return out


def difftest(a: EngineConfig, b: EngineConfig, operators=OPERATORS, cases: int = 200, seed: int = 0,
             out_dir: Optional[str] = None, batch_size: int = 500, max_findings: Optional[int] = None,
             on_cases: Optional[Callable[[int], None]] = None) -> List[OperatorRun]:
    return [difftest_operator(op, a, b, cases, seed, batch_size, out_dir, max_findings, on_cases) for op in operators]
