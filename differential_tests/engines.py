"""Engine configurations for differential runs: ``ENGINE[@RELEASE]``.

``reference@3.6`` runs the reference engine with the 3.6 profile; ``spark`` the Spark backend at
the default release. Every configuration runs a *batch* of scenario documents at once (the Spark
backend turns a batch into one job) and returns one :class:`CaseResult` per document. The engines
themselves are the shared model's table (``reference.model.engines``).
"""
from __future__ import annotations

import copy
from typing import List, Optional

import attrs

from kssim.reference.model.engines import ENGINES, run_scenarios
from kssim.reference.model.errors import KssimError
from kssim.reference.model.profiles import DEFAULT_RELEASE, profile_for
from kssim.reference.model.scenario import scenario_from_dict


@attrs.frozen
class EngineConfig:
    engine: str
    release: str = DEFAULT_RELEASE

    @property
    def label(self) -> str:
        return f"{self.engine}@{self.release}"

    @property
    def profile(self):
        return profile_for(self.release)


@attrs.frozen
class CaseResult:
    """One scenario's run: outputs and failure (a KafkaWouldFail or None), or an error text."""

    outputs: tuple = ()
    failure: object = None
    error: Optional[str] = None
    drops: tuple = ()

    @classmethod
    def of(cls, result) -> "CaseResult":
        """From an engine's RunResult, or the exception that stopped the scenario."""
        if isinstance(result, KssimError):  # a refusal: the engine does not run this case
            return cls(error=str(result))
        if isinstance(result, Exception):  # a crash: reported like a refusal, with its class, not fatal
            return cls(error=f"engine error: {type(result).__name__}: {result}")
        return cls(outputs=tuple(result.outputs), failure=result.failure, drops=tuple(result.drops))


def parse_engine(text: str) -> EngineConfig:
    engine, _, release = text.partition("@")
    if engine not in ENGINES:
        raise KssimError(f"unknown engine {engine!r} in {text!r} (engines: {', '.join(ENGINES)})")
    release = release or DEFAULT_RELEASE
    profile_for(release)  # an unknown release is an error here, not later
    return EngineConfig(engine, release)


def at_release(doc: dict, release: str) -> dict:
    doc = copy.deepcopy(doc)
    doc["semantics"] = release
    return doc


def run_batch(config: EngineConfig, docs: List[dict], explain: bool = False) -> List[CaseResult]:
    """One CaseResult per document, run on ``config``'s engine at its release
    (``reference.model.engines.run_scenarios``: the Spark backend runs the batch as one job)."""
    scenarios = [scenario_from_dict(at_release(d, config.release), path=f"<case {i}>") for i, d in enumerate(docs)]
    # an engine that crashes on one case (a bug of its own) must not end the whole difftest: the
    # case is reported as not run on both (``rejected_because`` names the error)
    return [CaseResult.of(r) for r in run_scenarios(config.engine, scenarios, explain=explain, catch=Exception)]


#: the table-result operators ``KTable#suppress`` can follow, and the smallest scenario whose
#: only result a suppress must hold back (a window that never closes; a time limit never reached)
_SUPPRESS_PROBES = {
    "session_aggregate": ({"gap_ms": 10, "grace_ms": 0}, [("input", "k", "A")]),
    "window_aggregate": ({"size_ms": 10, "grace_ms": 0}, [("input", "k", "A")]),
    "sliding_aggregate": ({"time_difference_ms": 10, "grace_ms": 0}, [("input", "k", "A")]),
    "windowed_table_join": ({"join": "inner", "window": {"size_ms": 10, "grace_ms": 0}},
                            [("left", "k", "A"), ("right", "k", "B")]),
    "table_table_join": ({"join": "inner"}, [("left", "k", "A"), ("right", "k", "B")]),
    "fk_join": ({"join": "inner", "foreign_key": {"field": "fk"}},
                [("left", "k", {"fk": "x"}), ("right", "x", "B")]),
}
_SUPPORTS_SUPPRESS: dict = {}


def suppress_probe(operator: str, suppressed: bool) -> dict:
    """The probe scenario of ``operator``, with or without ``suppress``."""
    fields, records = _SUPPRESS_PROBES[operator]
    topology = {"operator": operator, **copy.deepcopy(fields)}
    if suppressed:
        windowed = operator not in ("table_table_join", "fk_join")
        topology["suppress"] = {"until": "window_close"} if windowed else {"until": "time_limit", "time_limit_ms": 100}
    return {"format": "kssim-scenario/1", "name": f"suppress-probe-{operator}", "topology": topology,
            "inputs": [{"topic": t, "key": k, "value": v, "ts": 0} for t, k, v in records]}


def supports_suppress(config: EngineConfig, operator: str) -> bool:
    """Does ``config``'s engine implement ``KTable#suppress`` after ``operator``? Asked of the
    engine, not assumed: the probe's only result must come out without suppress and be held back
    with it (an engine that rejects suppress, or ignores it, does not implement it). One small
    batch per (engine, release, operator), remembered."""
    if operator not in _SUPPRESS_PROBES or not config.profile.suppress_operator:
        return False
    memo = (config.engine, config.release, operator)
    if memo not in _SUPPORTS_SUPPRESS:
        try:
            plain, suppressed = run_batch(config, [suppress_probe(operator, False), suppress_probe(operator, True)])
        except KssimError:  # the operator does not exist in that release
            _SUPPORTS_SUPPRESS[memo] = False
            return False
        _SUPPORTS_SUPPRESS[memo] = (not plain.error and not suppressed.error and len(plain.outputs) == 1
                                    and not suppressed.outputs and suppressed.failure is None)
    return _SUPPORTS_SUPPRESS[memo]


def run_with_rules(config: EngineConfig, doc: dict, rules: dict) -> CaseResult:
    """``doc`` run on ``config``'s engine at its release with some rules changed (``rules``: rule
    name -> holds; a counterfactual profile, :meth:`Profile.with_rule`); a run the changed rules
    break (a combination no release has) is an error result, not an exception."""
    profile = config.profile
    for name, holds in rules.items():
        profile = profile.with_rule(name, holds)
    try:
        scenario = scenario_from_dict(at_release(doc, config.release), path="<counterfactual>")
        scenario = attrs.evolve(scenario, profile=profile)
        result, = run_scenarios(config.engine, [scenario], catch=Exception)
    except KssimError as exc:
        result = exc
    return CaseResult.of(result)
