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

from reference.model.engines import ENGINES, run_scenarios
from reference.model.errors import KssimError
from reference.model.profiles import DEFAULT_RELEASE, profile_for
from reference.model.scenario import scenario_from_dict


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
        if isinstance(result, Exception):
            return cls(error=str(result))
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
    return [CaseResult.of(r) for r in run_scenarios(config.engine, scenarios, explain=explain, catch=KssimError)]
