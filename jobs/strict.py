"""The bases every spec model and record part share: strict, so an unknown or misspelt key is
an error."""

import dataclasses
import math
from typing import Annotated, Any, Self, TypeVar, dataclass_transform

from pydantic import AfterValidator, BaseModel, ConfigDict
from pydantic.dataclasses import dataclass


def _finite(value: bool | int | float | str) -> bool | int | float | str:
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"a parameter must be a finite number, not {value} (YAML's .nan or "
                         ".inf); give a number or a string")
    return value


# Values a recipe parameter may take in YAML.
Scalar = bool | int | float | str
# A parameter as a sweep gives it, its numbers finite: no command takes .nan or .inf, and the
# sweep's JSON (written by orjson, workers/shared/sweep_json.py) cannot say them. Checked
# where a sweep is read, not in every cell parsed back (a Python call a value: some 2 % of a
# 100,000-cell record).
Param = Annotated[Scalar, AfterValidator(_finite)]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# One set of field names for every model given the same fields (see `Lean`).
_FIELD_SETS: dict[frozenset[str], set[str]] = {}
_LAST: dict[type, set[str]] = {}  # each class's last shared set


class Lean(Strict):
    """A model a record may hold by the thousand: a group, a row, a build, a missing cell.

    pydantic keeps, beside each instance's values, its own set of the fields it was given:
    2.2 KB for a measurement's 37 fields, more than its values: 70 of the 170 MiB a
    10,000-cell record's models held (the parts held once per cell or run are `slotted`, and
    have no such set). Frozen, a model never changes that set,
    so every instance given the same fields shares one; `model_copy` copies it, so a copy
    kept by the hundred thousand is made with `copy_with` instead. `model_fields_set` is
    that shared set: read it, never change it.
    """

    def model_post_init(self, context: Any, /) -> None:
        self._share_fields_set()

    def copy_with(self, **values: Any) -> Self:
        """`model_copy(update=values)`, its set of fields shared."""
        copy = self.model_copy(update=values)
        copy._share_fields_set()
        return copy

    def _share_fields_set(self) -> None:
        given = self.__pydantic_fields_set__
        shared = _LAST.get(type(self))
        if shared is None or shared != given:  # most instances of a class repeat the last set
            # A copy registered: `given` may be a caller's own (model_construct's _fields_set).
            shared = _LAST[type(self)] = _FIELD_SETS.setdefault(frozenset(given), set(given))
        object.__setattr__(self, "__pydantic_fields_set__", shared)


_T = TypeVar("_T")


@dataclass_transform(frozen_default=True, kw_only_default=True,
                     field_specifiers=(dataclasses.field,))
def slotted(cls: type[_T]) -> type[_T]:
    """A record's part held once per cell or run, by the hundred thousand, as a frozen
    pydantic dataclass whose values lie in slots.

    A model keeps its values in a dict of its own: a measurement's 37 took 832 bytes beside
    the model's 80, a host run's 8 took 272, where slots take 8 bytes a value (328 bytes a
    measurement in all, 96 a host run). Validated, serialised and compared as a model is
    (an unknown key is refused as an "unexpected keyword argument"); copied with `replaced`.
    """
    made = dataclass(frozen=True, slots=True, kw_only=True,
                     config=ConfigDict(extra="forbid"))(cls)
    return made  # type: ignore[return-value]


def assembled(cls: type[_T], **values: Any) -> _T:
    """A `slotted` part from values already of its fields' types, every field given, not
    validated again: for parts made by the ten thousand from validated pieces (a sweep's
    cells, where validating each was 29 % of expanding a 10,000-cell sweep)."""
    names = _slots(cls)
    if values.keys() != names:
        raise TypeError(f"{cls.__name__} needs every field: {sorted(names ^ values.keys())}")
    part = object.__new__(cls)
    for name, value in values.items():
        object.__setattr__(part, name, value)  # frozen: set as its own __init__ sets them
    return part


_SLOTS: dict[type, frozenset[str]] = {}  # by class: functools.cache would not take type[_T]


def _slots(cls: type) -> frozenset[str]:
    names = _SLOTS.get(cls)
    if names is None:
        names = _SLOTS[cls] = frozenset(field_names(cls))
    return names


def replaced(part: _T, **values: Any) -> _T:
    """A `slotted` part with `values` changed, validated again."""
    return dataclasses.replace(part, **values)  # type: ignore[type-var]


def dumped(part: object, mode: str = "python", exclude_none: bool = False) -> Any:
    """A `slotted` part as a model's `model_dump(mode=..., exclude_none=...)` gives it."""
    serializer = type(part).__pydantic_serializer__  # type: ignore[attr-defined]
    return serializer.to_python(part, mode=mode, exclude_none=exclude_none)


def dumped_json(part: object, exclude_none: bool = False, indent: int | None = None) -> bytes:
    """A `slotted` part (or a model) as a model's `model_dump_json()` gives it."""
    serializer = type(part).__pydantic_serializer__  # type: ignore[attr-defined]
    return serializer.to_json(part, exclude_none=exclude_none,  # type: ignore[no-any-return]
                              indent=indent)


def parsed(cls: type[_T], raw: str | bytes) -> _T:
    """A `slotted` part validated from its JSON, as a model's `model_validate_json`."""
    return cls.__pydantic_validator__.validate_json(raw)  # type: ignore[attr-defined,no-any-return]


def field_names(cls: type) -> tuple[str, ...]:
    """A `slotted` class's fields, in order."""
    return tuple(f.name for f in dataclasses.fields(cls))

