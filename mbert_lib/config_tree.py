"""Nested frozen dataclasses <-> plain dicts / yaml, and dotted-key overrides.

The machinery behind `mbert_lib.experiment`, independent of what the sections
hold: `from_dict` builds a dataclass tree from nested dicts, checking every key
and every value against the field's type annotation (bool, int, float, str,
Optional[...], tuple[str | int, ...], Mapping, nested dataclass; a float must be
finite, nan and ±inf are refused, and an int must fit in 64 bits); `apply_overrides`
applies tf-models-style "a.b=1,c=[x, y]" overrides (values parsed as yaml)
and validates again. Errors name the dotted key.
"""

from __future__ import annotations

import dataclasses
import math
import os
import types
import typing
from collections.abc import Mapping
from typing import Any

import yaml

from mbert_lib import atomic


def check(condition: bool, key: str, expected: str, value: Any) -> None:
    """ValueError "<key> must be <expected>, got <value>" unless `condition`."""
    if not condition:
        raise ValueError(f"{key} must be {expected}, got {value!r}")


def check_positive(section: Any, *names: str, prefix: str) -> None:
    """`check` that each named field of `section` that is set (not None) is finite and > 0."""
    for name in names:
        value = getattr(section, name)
        if value is not None:
            if isinstance(value, float):
                check(math.isfinite(value), f"{prefix}.{name}", "a finite number", value)
            check(value > 0, f"{prefix}.{name}", "> 0", value)


def _number(value: Any, key: str) -> float:
    """A finite number; yaml reads 1e-3 (no dot) as a string, which is converted."""
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            pass
    check(isinstance(value, (int, float)) and not isinstance(value, bool), key, "a number", value)
    return _finite(value, key)


def _items(value: Any, item_type: type, key: str) -> tuple:
    """A list of `item_type` (strings or integers) as a tuple."""
    what = f"a list of {'strings' if item_type is str else 'integers'}"
    check(isinstance(value, (list, tuple)), key, what, value)
    for item in value:
        check(isinstance(item, item_type) and not isinstance(item, bool), key, what, value)
    return tuple(value)


def _coerce(value: Any, annotation: Any, key: str) -> Any:
    """`value` checked (and converted where lossless) against a type annotation."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):  # X | None (or Optional[X])
        if value is None:
            return None
        return _coerce(value, next(a for a in args if a is not type(None)), key)
    if dataclasses.is_dataclass(annotation):
        return from_dict(annotation, value, key)
    if annotation is bool:
        check(isinstance(value, bool), key, "true or false", value)
    elif annotation is int:
        check(isinstance(value, int) and not isinstance(value, bool), key, "an integer", value)
        # TensorFlow counts steps (and takes seeds and sizes) in int64
        check(-(2**63) <= value < 2**63, key, "an integer that fits in 64 bits", value)
    elif annotation is float:
        value = _number(value, key)
    elif annotation is str:
        check(isinstance(value, str), key, "a string", value)
    elif origin is tuple:  # tuple[str, ...] or tuple[int, ...]
        value = _items(value, args[0], key)
    elif origin in (dict, Mapping, typing.Mapping) or annotation is Mapping:
        check(isinstance(value, Mapping), key, "a mapping", value)
        value = dict(value)
    return value


def _finite(value: int | float, key: str) -> float:
    """`value` as a float; ValueError naming `key` for nan, ±inf or an int too large for a
    float: no setting of a run (a rate, a weight, a probability) means anything there."""
    try:
        number = float(value)
    except OverflowError:  # an integer beyond the largest float
        number = math.inf
    check(math.isfinite(number), key, "a finite number", value)
    return number


def from_dict(cls, values: Any, prefix: str = ""):
    """An instance of dataclass `cls` from nested dicts; unknown keys and bad types raise."""
    where = prefix or "the top level"
    if values is None:
        values = {}
    if not isinstance(values, Mapping):
        raise ValueError(f"{where} must be a mapping of keys to values, got {values!r}")
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    for key in values:
        if key not in names:
            dotted = f"{prefix}.{key}" if prefix else str(key)
            raise ValueError(f"unknown key '{dotted}'; known keys under {where}: {names}")
    kwargs = {k: _coerce(v, hints[k], f"{prefix}.{k}" if prefix else k) for k, v in values.items()}
    return cls(**kwargs)


def to_dict(config) -> dict[str, Any]:
    """Nested plain dicts / lists (tuples become lists), ready for yaml."""

    def plain(value):
        if dataclasses.is_dataclass(value):
            return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
        if isinstance(value, Mapping):
            return {k: plain(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [plain(v) for v in value]
        return value

    return plain(config)


def to_yaml(config) -> str:
    return yaml.safe_dump(to_dict(config), sort_keys=False, default_flow_style=False)


def save_yaml(config, path: str | os.PathLike) -> None:
    """Writes the config as yaml, atomically."""
    atomic.write_text(path, to_yaml(config))


# ------------------------------------------------------------------- overrides
def _split_top_level(text: str) -> list[str]:
    """`text` split at the commas outside [...], {...} and quotes."""
    items, depth, quote, current = [], 0, None, ""
    for char in text:
        if quote:
            quote = None if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
        elif char == "," and depth == 0:
            items.append(current)
            current = ""
            continue
        current += char
    items.append(current)
    return items


def parse_overrides(text: str) -> list[tuple[str, Any]]:
    """ "a.b=1,c=[x, y]" -> [("a.b", 1), ("c", ["x", "y"])], values parsed as yaml.

    Commas inside [...], {...} or quotes do not split.
    """
    items = _split_top_level(text)
    pairs = []
    for item in (i.strip() for i in items):
        if not item:
            continue
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"params_override: expected key=value, got {item!r}")
        try:
            value = yaml.safe_load(raw.strip()) if raw.strip() else None
        except yaml.YAMLError as e:
            raise ValueError(
                f"params_override: cannot parse the value of {key.strip()!r}: {raw.strip()!r} ({e})"
            ) from None
        pairs.append((key.strip(), value))
    return pairs


def apply_overrides(config, overrides: str | list[tuple[str, Any]]):
    """A new config of the same class with dotted-key overrides applied and validated."""
    pairs = parse_overrides(overrides) if isinstance(overrides, str) else overrides
    values = to_dict(config)
    for dotted, value in pairs:
        parts, node, cls = dotted.split("."), values, type(config)
        for i, part in enumerate(parts):
            here = ".".join(parts[: i + 1])
            if cls is not None:  # inside a dataclass section: the key must exist
                fields = {f.name: f for f in dataclasses.fields(cls)}
                if part not in fields:
                    where = ".".join(parts[:i]) or "the top level"
                    raise ValueError(
                        f"unknown key '{dotted}' in params_override: no "
                        f"'{part}' under {where}; known keys: {list(fields)}"
                    )
                annotation = typing.get_type_hints(cls)[part]
                cls = annotation if dataclasses.is_dataclass(annotation) else None
            if i == len(parts) - 1:
                node[part] = value
            else:
                if not isinstance(node.get(part), dict):
                    raise ValueError(
                        f"params_override: '{here}' is a value, not a section, "
                        f"so '{dotted}' does not exist"
                    )
                node = node[part]
    return from_dict(type(config), values)


def changed_keys(old, new) -> list[str]:
    """Dotted keys whose values differ between two configs (or their dict forms)."""

    def flat(value, prefix=""):
        if dataclasses.is_dataclass(value):
            value = to_dict(value)
        if isinstance(value, Mapping):
            out = {}
            for k, v in value.items():
                out.update(flat(v, f"{prefix}.{k}" if prefix else str(k)))
            return out
        return {prefix: value}

    a, b = flat(old), flat(new)
    return sorted(k for k in set(a) | set(b) if a.get(k, "<unset>") != b.get(k, "<unset>"))
