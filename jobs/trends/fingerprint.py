"""A testbed: the stable facts of a host that a measurement depends on, and their fingerprint.

The facts come from the one host probe (workers/host_facts.py) that `benchfleet hosts` shows and the
record's host table prints. Never the hostname (CI runners and namespace hosts share or change
theirs) nor a clock. Memory is the machine's nominal size (the probe reads a little less: the
kernel keeps some), so a kernel update never splits a history. The MLX pin is a fact of the
target's commit (mlxcel pins MLX in its tree), so each point carries it but the fingerprint
does not: a pin bump is a change to find, not a new testbed.
"""

import hashlib
import json

from jobs.record.attempts import HostFacts
from jobs.strict import Strict

# The declared fields, in the order `history` shows them.
FIELDS = ("chip", "gpu", "driver", "cuda", "os", "os_build", "arch", "memory_gb",
          "power_mode")
FINGERPRINT_CHARS = 12
# Memory is sold in these multiples of a power of two (16, 24, 36, 48, 96, 128, 192 GB...).
_NOMINAL = (1.0, 1.125, 1.25, 1.5, 1.75)


class Testbed(Strict):
    id: str
    fields: dict[str, str]
    # True when the worker's BENCHFLEET_TESTBED named it, False for a fingerprint.
    declared: bool


def stable_fields(host: HostFacts) -> dict[str, str]:
    values = {name: getattr(host, name) for name in FIELDS}
    values["memory_gb"] = f"{nominal_gb(host.memory_gb):g}"
    return {k: str(v) for k, v in values.items() if v not in (None, "")}


def nominal_gb(reported: float) -> float:
    """The smallest nominal size at or above what the probe read."""
    if reported <= 1:
        return 1.0
    power = 1.0
    while power * 2 < reported:
        power *= 2
    return min([power * k for k in _NOMINAL if power * k >= reported], default=power * 2)


def fingerprint(fields: dict[str, str]) -> str:
    canonical = json.dumps(fields, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:FINGERPRINT_CHARS]


def host_testbed(host: HostFacts) -> Testbed:
    fields = stable_fields(host)
    if host.testbed:
        return Testbed(id=host.testbed, fields=fields, declared=True)
    return Testbed(id=fingerprint(fields), fields=fields, declared=False)


def clashes(claims: dict[str, Testbed]) -> list[str]:
    """One sentence per testbed id that hosts claim with different facts (by hostname). Only a
    declared name can do that: the user's word joins the hosts, and the sentence names the
    facts that differ so a typo or a forgotten GPU swap is seen."""
    by_id: dict[str, dict[str, Testbed]] = {}
    for hostname, bed in sorted(claims.items()):
        by_id.setdefault(bed.id, {})[hostname] = bed
    problems = []
    for bed_id, hosts in by_id.items():
        distinct = {json.dumps(b.fields, sort_keys=True) for b in hosts.values()}
        if len(distinct) < 2:
            continue
        names = sorted(hosts)
        differ = sorted({k for b in hosts.values() for k in b.fields
                         if len({h.fields.get(k) for h in hosts.values()}) > 1})
        problems.append(f"testbed {bed_id} is claimed by hosts {', '.join(names)}, whose "
                        f"{', '.join(differ)} differ; their points are one series because "
                        "BENCHFLEET_TESTBED says so: give each host its own name if they are "
                        "not one testbed")
    return problems
