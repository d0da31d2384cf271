"""Engine configurations for differential runs: ``ENGINE[@RELEASE]``.

``reference@3.6`` runs the reference engine with the 3.6 profile; ``spark`` the Spark backend at
the default release. Every configuration runs a *batch* of scenario documents at once (the Spark
backend turns a batch into one job) and returns one :class:`CaseResult` per document.
"""
from __future__ import annotations

import copy
from typing import List, Optional

import attrs

from reference.model.errors import KssimError, UnsupportedOperator
from reference.model.profiles import DEFAULT_RELEASE, profile_for
from reference.model.scenario import scenario_from_dict

ENGINES = ("reference", "spark")


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
    scenarios = [scenario_from_dict(at_release(d, config.release), path=f"<case {i}>") for i, d in enumerate(docs)]
    if config.engine == "reference":
        return [_run_reference(s, explain) for s in scenarios]
    return _run_spark(scenarios)


def _run_reference(scenario, explain):
    from reference.runtime.engine import run_scenario

    try:
        result = run_scenario(scenario, explain=explain)
    except (UnsupportedOperator, KssimError) as exc:
        return CaseResult(error=str(exc))
    return CaseResult(outputs=result.outputs, failure=result.failure, drops=result.drops)


def _run_spark(scenarios):
    from spark_backend.runtime.runner import run_scenarios

    results = []
    for res in run_scenarios(scenarios):
        if isinstance(res, Exception):
            results.append(CaseResult(error=str(res)))
        else:
            results.append(CaseResult(outputs=res.outputs, failure=res.failure, drops=tuple(getattr(res, "drops", ()))))
    return results
