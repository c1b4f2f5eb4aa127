"""Phase rules: kernel (CUDA) and op (Metal DOT) names -> the phase of a decode token they serve.

A sweep's `phases:` holds a default rule set, extra rules per MoE family (the routers differ),
and the kernels whose role depends on the shape, which only the run's evidence may classify
(jobs/profiles/attribution.py applies them; docs/verdict.md states the rules). The older form, one
mapping of phase -> patterns, still reads: it is the default rule set.
"""

import re
from collections.abc import Iterator

from pydantic import Field, model_validator

from jobs.strict import Strict

PhaseMap = dict[str, list[str]]
_SECTIONS = {"default", "families", "by_evidence"}


class EvidenceRule(Strict):
    """A kernel whose role depends on the shape (`qmm_sm80` is the prefill GEMM and, at decode,
    the routed-expert kernel when tokens x top_k >= 8): it joins `phase` only when the run's
    evidence ties its decode launches to the MoE calls; otherwise it stays unclassified."""

    pattern: str
    phase: str
    max_calls_per_moe_call: int = Field(default=4, ge=1, le=16, description=(
        "its decode launches must be 1 to this many times the decode MoE calls"))


class PhaseRules(Strict):
    default: PhaseMap = Field(default_factory=dict, description="phase -> patterns, in order")
    families: dict[str, PhaseMap] = Field(default_factory=dict, description=(
        "family -> extra phase -> patterns, tried before the default ones"))
    by_evidence: list[EvidenceRule] = Field(default_factory=list)

    @model_validator(mode="after")
    def _check(self) -> "PhaseRules":
        maps = [("default", self.default)] + [(f"families.{f}", m)
                                              for f, m in self.families.items()]
        for where, rules in maps:
            for phase, patterns in rules.items():
                for pattern in patterns:
                    _compile(pattern, f"{where}: phase {phase!r}")
        for rule in self.by_evidence:
            _compile(rule.pattern, "by_evidence")
            if rule.phase not in self.default:
                raise ValueError(f"by_evidence: phase {rule.phase!r} is not a phase of "
                                 f"'default' ({', '.join(self.default) or 'none'})")
        return self

    def names(self, family: str | None = None) -> list[str]:
        """The phases a family's table shows, in order: the default ones, then its own."""
        own = self.families.get(family or "", {})
        return list(self.default) + [p for p in own if p not in self.default]

    def ordered(self, family: str | None) -> Iterator[tuple[str, list[str]]]:
        """(phase, patterns) in the order they are tried: the family's rules first."""
        yield from self.families.get(family or "", {}).items()
        yield from self.default.items()

    def evidence_rule(self, name: str) -> EvidenceRule | None:
        return next((r for r in self.by_evidence if re.search(r.pattern, name, re.IGNORECASE)),
                    None)


def phase_rules(value: object) -> object:
    """Read the older form (phase -> patterns) as the default rule set; refuse a mixture."""
    if not isinstance(value, dict) or not value:
        return value
    keys = set(value)
    if keys <= _SECTIONS:
        return value
    if keys & _SECTIONS:
        raise ValueError(f"phases: either 'phase: [patterns]' (one rule set for every family) "
                         f"or the sections {', '.join(sorted(_SECTIONS))}; this mixes "
                         f"{', '.join(sorted(keys & _SECTIONS))} with phase names")
    return {"default": value}


def _compile(pattern: str, where: str) -> None:
    try:
        re.compile(pattern)
    except re.error as error:
        raise ValueError(f"{where}: pattern {pattern!r} is not a regular expression "
                         f"({error})") from None
