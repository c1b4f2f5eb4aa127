"""The survival runs' section of docs/faults.md: a row per scenario, each replaced when that
scenario runs again (the rest of the page is left as it is)."""

import os
import platform
from dataclasses import dataclass
from pathlib import Path

DOC = Path(__file__).parents[2] / "docs" / "faults.md"
HEADING = "## Survival runs at 2,000 cells"
# Problems named in a row; the rest are counted.
SHOWN = 3


@dataclass
class Row:
    name: str
    what: str
    cells: int
    done_first: int
    problems: list[str]
    wall_s: float
    recovery: str
    notes: str
    day: str
    load1: float

    def outcome(self) -> str:
        said = f"{self.done_first:,} of {self.cells:,} done at attempt 1, one attempt stored"
        if not self.problems:
            return said
        more = len(self.problems) - SHOWN
        return (f"**FAILED**: {said}; " + "; ".join(self.problems[:SHOWN])
                + (f"; and {more} more" if more > 0 else ""))

    def line(self, command: str) -> str:
        cells = [f"`{self.name}`: {self.what}", f"`{command}`, {self.day}, load1 "
                 f"{self.load1:.1f}", self.outcome(), f"{self.wall_s:.0f}", self.recovery,
                 self.notes or "–"]
        return "| " + " | ".join(c.replace("|", "/").replace("\n", " ") for c in cells) + " |"


INTRO = [
    HEADING, "",
    "Issue 16's survival runs, made by `tests/faults/survive.py` (not in CI: a full run takes "
    "tens of minutes). Each scenario runs sweeps of the `noop-bench` recipe "
    "(`tests/faults/catalogue.yaml`: it prints a fixed result at once, so a cell costs the "
    "fleet's own bookkeeping alone), a group of 5 arms per commit of the target (50 groups at "
    "2,000 cells), through real `benchfleet worker` "
    "processes and a private redis-server (AOF on), on "
    f"{platform.node()} ({os.cpu_count()} cores, shared). The checks: every cell `done` at "
    "attempt 1 with exactly one attempt in the artifact store, the harness's `verify` (one "
    "`done` per cell in the log, `accepted.json` naming that attempt, every artifact matching "
    "its sha256), none stuck; a scenario not over in 10 minutes has failed. Wall: from the "
    "first submit to the last cell final. Load1 is the host's at the scenario's end.", "",
    "| scenario | run | outcome | wall (s) | recovery (s) | notes |",
    "|---|---|---|---|---|---|",
]
OUTRO = [
    "",
    "Recovery: cut submit, the one `submit --resume` command's own wall time; Sentinel, from the "
    "kill to the next cell done (and to the replica's promotion); crowd, from the launch to "
    "every worker live and to the first cell done.",
    "",
    "A worker's Redis connections (the crowd row counts them after the sweep, matching CLIENT "
    "LIST's addresses to each worker's sockets). The design needs five: benchfleet's own "
    "client (leases, states, notes: EVALSHA), the cancel control line (SUBSCRIBE, a raw "
    "socket), Celery's task consumer (BRPOP), the remote-control mailbox kept for inspection "
    "(PSUBSCRIBE) and one for task events (PUBLISH; `BENCHFLEET_EVENTS`). The other five are "
    "kombu's, found by tracing each connect and each connection's first commands in a "
    "worker: a command connection beside each blocking one (the task channel's, which "
    "restores unacknowledged messages under a lock at start, MULTI/EXEC; the mailbox's, "
    "which declares and binds its queue and refreshes the binding with a script, EVALSHA); "
    "a connection that each new kombu connection opens for its first channel's PING and "
    "then leaves idle (the consumer's, the event dispatcher's); and a second PUBLISH "
    "connection the event dispatcher's pool opens at the first cell's end. Not changed "
    "here.",
]


def write_rows(rows: list[Row], command: str, order: list[str], doc: Path = DOC) -> None:
    """Put these rows into the section, replacing the rows of the same scenarios; rows in
    `order` (of scenario names)."""
    text = doc.read_text()
    head, found, tail = text.partition(HEADING)
    kept: dict[str, str] = {}
    rest = ""
    if found:
        body, heading, after = tail.partition("\n## ")
        rest = heading + after if heading else ""
        for line in body.splitlines():
            if line.startswith("| `"):
                kept[line[3:].split("`", 1)[0]] = line
    for row in rows:
        kept[row.name] = row.line(command)
    # A scenario no longer in `order` (renamed or gone) loses its row.
    section = [*INTRO, *(kept[name] for name in order if name in kept), *OUTRO]
    doc.write_text(head.rstrip("\n") + "\n\n" + "\n".join(section) + "\n"
                   + (("\n" + rest.lstrip("\n")) if rest else ""))
    print(f"survive: wrote {len(rows)} rows to {doc}")
