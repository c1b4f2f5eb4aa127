"""The worker's env file: KEY="VALUE" lines that systemd's EnvironmentFile= reads as written,
and that the supervisor and the launchd wrapper read with `read_env`."""

import re
from pathlib import Path

_LINE = re.compile(r'^([A-Z_][A-Z0-9_]*)="((?:[^"\\]|\\.)*)"$')


def render_env(values: dict[str, str], by: str = "benchfleet deploy install") -> str:
    lines = [f"# Written by `{by}`; holds secrets (mode 600)."]
    for name in sorted(values):
        escaped = values[name].replace("\\", "\\\\").replace('"', '\\"')
        if "\n" in values[name]:
            raise ValueError(f"{name}: a setting cannot hold a newline")
        lines.append(f'{name}="{escaped}"')
    return "\n".join(lines) + "\n"


def read_env(path: Path) -> dict[str, str]:
    values = {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        match = _LINE.match(line)
        if match is None:
            raise ValueError(f"{path}:{number}: not a KEY=\"VALUE\" line")
        values[match.group(1)] = re.sub(r"\\(.)", r"\1", match.group(2))
    return values
