"""The study's sections of the Markdown record: the verdict per backend and model with its
rule, and the control comparison. A view: it lays out the record's answer, computing nothing."""

from jobs.statistics.spans import ratio_text
from jobs.studies.moe_decode_gap.answer import Answer


def answer_text(a: Answer) -> str:
    rows = ["## Verdict\n", f"Rule: {a.rule}\n",
            "| commit | backend | model | family | verdict | why | settled by | missing |",
            "|---|---|---|---|---|---|---|---|"]
    rows += [f"| `{v.commit[:12]}` | {v.backend} | {v.model} | {v.family} | **{v.outcome}** "
             f"| {_cell(v.reason)} "
             f"| {', '.join(f'`{s}`' for s in v.settled_by) or '–'} "
             f"| {_cell('; '.join(v.missing)) or '–'} |" for v in a.verdicts]
    rows += ["\n## Control\n", f"Each family's `{a.candidate}` vs `{a.baseline}` gap and the "
             "control's, each by the headline rule on unflagged runs: only the family slower is "
             "family-specific, neither is no gap in either; both slower, their per-run ratios "
             "are compared by the same rule: apart and different is family-specific (or "
             "narrower), ranges overlapping (not significant, or same) is general; undecided "
             "with the ranges apart (not yet known, or within the A/A floor) is not settled.\n",
             "| commit | backend | control | control ratio | fused-off vs candidate | model "
             "| family | family ratio | gap is | why |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for c in a.controls:
        for f in c.families or []:
            rows.append(f"| `{c.commit[:12]}` | {c.backend} | {c.control} "
                        f"| {ratio_text(c.control_ratio)} "
                        f"| {ratio_text(c.fused_off_vs_candidate)} | {f.model} | {f.family} "
                        f"| {ratio_text(f.ratio)} | {f.relation} | {_cell(f.reason)} |")
    for models in a.not_comparable:
        rows.append(f"\n{' and '.join(models)} are one checkpoint under non-comparable "
                    "quantization recipes: their rows are never compared with each other "
                    "(not a precision comparison).")
    return "\n".join(rows) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
