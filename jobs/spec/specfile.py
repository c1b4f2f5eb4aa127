"""YAML files into validated models, with every problem located by file, line and field path."""

from collections.abc import Iterable
from typing import TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from jobs.errors import SpecError

Loc = tuple[str | int, ...]
M = TypeVar("M", bound=BaseModel)


def load(model: type[M], text: str, source: str) -> tuple[M, yaml.Node]:
    """Parse and validate `text`; raises SpecError listing every problem, one per line."""
    root = _compose(text, source)
    if not isinstance(root, yaml.MappingNode):
        raise SpecError([f"{source}:1: the file must be a YAML mapping of keys to values"])
    _reject_duplicate_keys(root, source)
    try:
        # Strict: `n: "3"` is an error, not 3; YAML already gives numbers as numbers.
        return model.model_validate(yaml.safe_load(text), strict=True), root
    except ValidationError as error:
        raise SpecError([_problem(source, root, tuple(e["loc"]), _message(e))
                         for e in error.errors()]) from None


def located(source: str, root: yaml.Node, problems: Iterable[tuple[Loc, str]]) -> list[str]:
    return [_problem(source, root, loc, message) for loc, message in problems]


def _compose(text: str, source: str) -> yaml.Node | None:
    try:
        return yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = mark.line + 1 if mark else 1
        problem = getattr(error, "problem", None) or str(error)
        raise SpecError([f"{source}:{line}: not valid YAML: {problem}"]) from None


def _problem(source: str, root: yaml.Node, loc: Loc, message: str) -> str:
    path = ".".join(str(p) for p in loc) or "(top level)"
    return f"{source}:{_line(root, loc)}: {path}: {message}"


def _message(error: object) -> str:
    e = dict(error)  # type: ignore[call-overload]
    if e["type"] == "extra_forbidden":
        return "unknown key; check its spelling against the reference in the README"
    if e["type"] == "missing":
        return "required key is missing"
    return str(e["msg"]).removeprefix("Value error, ")


def _line(node: yaml.Node, loc: Loc) -> int:
    """The line of the deepest node along `loc` that exists in the file."""
    for key in loc:
        child = _child(node, key)
        if child is None:
            break
        node = child
    return node.start_mark.line + 1


def _child(node: yaml.Node, key: str | int) -> yaml.Node | None:
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            if k.value == str(key):
                # An empty value is reported at its key.
                found: yaml.Node = v if not isinstance(v, yaml.ScalarNode) or v.value else k
                return found
    if isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
        item: yaml.Node = node.value[key]
        return item
    return None


def _reject_duplicate_keys(node: yaml.Node, source: str) -> None:
    problems: list[str] = []
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, yaml.MappingNode):
            seen: set[str] = set()
            for k, v in current.value:
                if k.value in seen:
                    problems.append(f"{source}:{k.start_mark.line + 1}: key {k.value!r} "
                                    f"appears twice in one mapping; keep one")
                seen.add(k.value)
                stack.append(v)
        elif isinstance(current, yaml.SequenceNode):
            stack.extend(current.value)
    if problems:
        raise SpecError(sorted(problems))
