"""Shipped sweep presets: a YAML template per question, filled in by `benchfleet init`."""

from pathlib import Path

from jobs.errors import UserError

# Each study (jobs/studies/<name>/) ships its preset as preset.yaml; `moe_decode_gap` is
# offered as `moe-decode-gap`.
STUDIES = Path(__file__).parents[1] / "jobs" / "studies"


def names() -> list[str]:
    return sorted(p.parent.name.replace("_", "-") for p in STUDIES.glob("*/preset.yaml"))


def _path(name: str) -> Path:
    return STUDIES / name.replace("-", "_") / "preset.yaml"


def describe(name: str) -> str:
    """The preset's opening comment, as one line."""
    lines = _path(name).read_text().splitlines()
    opening = []
    for line in lines:
        if not line.startswith("#"):
            break
        opening.append(line.lstrip("# ").strip())
    return " ".join(opening)


def render(name: str, commit: str, repo: str) -> str:
    if name not in names():
        raise UserError(f"no preset {name!r}; `benchfleet presets` lists {', '.join(names())}")
    for what, value in (("--commit", commit), ("--repo", repo)):
        if not value.strip() or any(c in value for c in "\"\n"):
            raise UserError(f"{what} {value!r} must be non-empty, one line, without quotes")
    text = _path(name).read_text()
    return text.replace("@COMMIT@", commit).replace("@REPO@", repo)
