"""Command templates: `{name}` placeholders filled per argument, never through a shell."""

import string
from collections.abc import Mapping

from jobs.errors import UserError
from jobs.strict import Scalar

_FORMATTER = string.Formatter()


def placeholders(template: str) -> list[str]:
    """Names a template refers to; only plain names are allowed (no `{a.b}` or `{a[0]}`)."""
    names = []
    for _, field, spec, conversion in _FORMATTER.parse(template):
        if field is None:
            continue
        if not field.isidentifier() or spec or conversion:
            raise ValueError(f"placeholder {{{field}}} in {template!r} must be a plain name")
        names.append(field)
    return names


def fill(template: str, values: Mapping[str, Scalar]) -> str:
    """One argument with its placeholders replaced; the result stays one argument."""
    parts = []
    for literal, field, _, _ in _FORMATTER.parse(template):
        parts.append(literal)
        if field is None:
            continue
        if field not in values:
            raise UserError(f"template {template!r} needs a value for {{{field}}}")
        parts.append(_text(values[field]))
    return "".join(parts)


def _text(value: Scalar) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)
