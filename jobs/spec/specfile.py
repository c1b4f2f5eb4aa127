"""YAML files into validated models, with every problem located by file, line and field path."""

from collections.abc import Iterable
from typing import TypeVar

import yaml
from pydantic import BaseModel, ValidationError
from yaml.constructor import SafeConstructor

from jobs.errors import SpecError

Loc = tuple[str | int, ...]
M = TypeVar("M", bound=BaseModel)

# Limits checked before anything is built from a file, so a hostile or broken one costs
# milliseconds and a sentence: its size, how deep it nests, how many values its aliases
# expand to (a "billion laughs" file is a few lines), and how long a number may be.
MAX_BYTES = 1 << 20
MAX_DEPTH = 64
MAX_VALUES = 100_000
MAX_DIGITS = 100
# libyaml's parser where PyYAML was built with it (its wheels are): seven times faster than
# the pure-Python one (the shipped catalogue: 14 against 100 ms). What a user gets must stay
# the pure parser's, and the two part in places: libyaml's error sentences differ (a file it
# refuses is read again by the pure one), it refuses `%YAML 1.3` and some escapes the pure
# one reads, and it reads tabs the pure one refuses (`a: b<TAB>`), so a file with a tab goes
# to the pure parser whole. tests/jobs/spec/test_spec_fuzz.py holds the two to one outcome.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load(model: type[M], text: str, source: str, reference: str = "docs/sweep.md"
         ) -> tuple[M, yaml.Node]:
    """Parse and validate `text`; raises SpecError listing every problem, one per line.
    `reference` is the page that lists the file's keys."""
    _within_limits(text, source)
    root = _compose(text, source)
    if not isinstance(root, yaml.MappingNode):
        raise SpecError([f"{source}:1: the file must be a YAML mapping of keys to values"])
    if (values := _expanded(root, {})) > MAX_VALUES:
        raise SpecError([f"{source}:1: its aliases expand to {values:,} values, more than "
                         f"{MAX_VALUES:,}; write the values out or use fewer aliases"])
    _reject_duplicate_keys(root, source)
    try:
        # Strict: `n: "3"` is an error, not 3; YAML already gives numbers as numbers.
        data = SafeConstructor().construct_document(root)  # from the nodes: no parse again
        return model.model_validate(data, strict=True), root
    except ValidationError as error:
        raise SpecError([_problem(source, root, tuple(e["loc"]), _message(e, reference))
                         for e in error.errors()]) from None


def located(source: str, root: yaml.Node, problems: Iterable[tuple[Loc, str]]) -> list[str]:
    return [_problem(source, root, loc, message) for loc, message in problems]


def _within_limits(text: str, source: str) -> None:
    """Size, depth and number length, from the parser's events (no recursion, nothing built)."""
    if len(text) > MAX_BYTES:
        raise SpecError([f"{source}:1: the file is {len(text):,} characters, more than "
                         f"{MAX_BYTES:,}; a sweep file is a page of YAML"])
    for loader in _loaders(text):
        try:
            _check_events(yaml.parse(text, Loader=loader), source)
            return
        except yaml.YAMLError:
            # libyaml refuses some files before ours are reached (1,000 levels of flow
            # nesting): the pure parser reads them as far as our limits, or fails too, and
            # composing then reports the error, located.
            continue


def _check_events(events: Iterable[yaml.Event], source: str) -> None:
    depth = 0
    for event in events:
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > MAX_DEPTH:
                raise SpecError([f"{source}:{_at(event)}: it nests more "
                                 f"than {MAX_DEPTH} levels deep; a sweep needs a few"])
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1
        elif (isinstance(event, yaml.ScalarEvent) and not event.style  # plain: None or ''
              and len(event.value) > MAX_DIGITS and _numeric(event.value)):
            raise SpecError([f"{source}:{_at(event)}: a number of "
                             f"{len(event.value):,} characters; numbers here have at most "
                             f"{MAX_DIGITS} digits"])


def _at(event: yaml.Event) -> int:
    return event.start_mark.line + 1 if event.start_mark else 1


def _numeric(value: str) -> bool:
    return value.lstrip("+-").replace("_", "").replace(".", "", 1).isdigit()


def _expanded(node: yaml.Node, seen: dict[int, int]) -> int:
    """How many values the node stands for once every alias is expanded (each shared node is
    counted once per use, computed once). Depth is already bounded by MAX_DEPTH."""
    if id(node) in seen:
        return seen[id(node)]
    children: list[yaml.Node] = []
    if isinstance(node, yaml.MappingNode):
        children = [n for pair in node.value for n in pair]
    elif isinstance(node, yaml.SequenceNode):
        children = list(node.value)
    seen[id(node)] = total = 1 + sum(_expanded(c, seen) for c in children)
    return total


Loader = type[yaml.SafeLoader] | type[yaml.CSafeLoader]


def _loaders(text: str) -> list[Loader]:
    """The parsers to try, in order; the pure one last, whose sentence a user gets."""
    return [yaml.SafeLoader] if "\t" in text or _LOADER is yaml.SafeLoader \
        else [_LOADER, yaml.SafeLoader]


def _compose(text: str, source: str) -> yaml.Node | None:
    *fast, pure = _loaders(text)
    for loader in fast:
        try:
            return yaml.compose(text, Loader=loader)
        except yaml.YAMLError:
            pass  # the pure parser reads it again, for its sentence (libyaml's words differ)
    try:
        return yaml.compose(text, Loader=pure)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = mark.line + 1 if mark else 1
        problem = getattr(error, "problem", None) or str(error)
        raise SpecError([f"{source}:{line}: not valid YAML: {problem}"]) from None


def _problem(source: str, root: yaml.Node, loc: Loc, message: str) -> str:
    path = ".".join(str(p) for p in loc) or "(top level)"
    return f"{source}:{_line(root, loc)}: {path}: {message}"


def _message(error: object, reference: str) -> str:
    e = dict(error)  # type: ignore[call-overload]
    if e["type"] == "extra_forbidden":
        return f"unknown key; check its spelling against the reference in {reference}"
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
    stack, visited = [node], set()
    while stack:
        current = stack.pop()
        if id(current) in visited:  # an alias: its node was checked where it was anchored
            continue
        visited.add(id(current))
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
