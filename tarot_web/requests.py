"""The checks of every request: a bad one gets a 4xx JSON error naming what is wrong, and nothing changes.

:class:`BadRequest` carries the HTTP status and the message; :func:`parse_json` reads a body (no
``NaN``/``Infinity``, no duplicate keys, a size limit); the ``field`` helpers check one value's type
(a bool is never taken for an int, a float never for an action id).
"""
from __future__ import annotations

import json
import math
from typing import Any

MAX_BODY = 64 * 1024  # bytes of a plain request
MAX_LOG = 4 * 1024 * 1024  # bytes of an uploaded game log


class BadRequest(Exception):
    """A request the server refuses: ``status`` (4xx) and a message naming what is wrong."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


def _no_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict:
    out = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"the key {k!r} is given twice")
        out[k] = v
    return out


def loads_strict(text: str) -> Any:
    """``json.loads`` without ``NaN``/``Infinity`` and duplicate keys (``ValueError`` saying which)."""
    return json.loads(text, parse_constant=_no_constant, object_pairs_hook=_no_duplicates)


def parse_json(body: bytes, allowed: set[str], limit: int = MAX_BODY) -> dict:
    """The JSON object of a request body, with only the ``allowed`` keys; ``BadRequest`` otherwise."""
    if len(body) > limit:
        raise BadRequest(413, f"request body of {len(body)} bytes is over the limit of {limit}")
    if not body.strip():
        return {}
    try:
        data = loads_strict(body.decode("utf-8"))
    except UnicodeDecodeError:
        raise BadRequest(400, "request body is not UTF-8 text") from None
    except ValueError as e:
        raise BadRequest(400, f"request body is not valid JSON: {e}") from None
    if not isinstance(data, dict):
        raise BadRequest(400, f"request body must be a JSON object, not {type(data).__name__}")
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise BadRequest(400, f"unknown field(s) {unknown}; allowed: {sorted(allowed)}")
    return data


def int_field(data: dict, key: str, lo: int, hi: int, default: Any = ...) -> Any:
    """``data[key]`` as an int in ``lo..hi`` (``default`` when absent; a bool or float is refused)."""
    if key not in data or data[key] is None:
        if default is ...:
            raise BadRequest(400, f"missing field {key!r} (an integer {lo}..{hi})")
        return default
    v = data[key]
    if type(v) is not int:
        raise BadRequest(422, f"{key} must be an integer {lo}..{hi}, not {type(v).__name__} {v!r}")
    if not lo <= v <= hi:
        raise BadRequest(422, f"{key} = {v} is out of range {lo}..{hi}")
    return v


def float_field(data: dict, key: str, lo: float, hi: float, default: float) -> float:
    """``data[key]`` as a finite number in ``lo..hi`` (``default`` when absent; a bool is refused)."""
    v = data.get(key)
    if v is None:
        return default
    if type(v) not in (int, float) or not math.isfinite(v):
        raise BadRequest(422, f"{key} must be a number {lo}..{hi}, not {type(v).__name__} {v!r}")
    if not lo <= v <= hi:
        raise BadRequest(422, f"{key} = {v} is out of range {lo}..{hi}")
    return float(v)


def str_field(data: dict, key: str, choices: list[str] | None = None, default: Any = ...) -> Any:
    """``data[key]`` as a string (one of ``choices`` when given)."""
    if key not in data or data[key] is None:
        if default is ...:
            raise BadRequest(400, f"missing field {key!r}" + (f" (one of {choices})" if choices else ""))
        return default
    v = data[key]
    if not isinstance(v, str):
        raise BadRequest(422, f"{key} must be a string, not {type(v).__name__} {v!r}")
    if choices is not None and v not in choices:
        raise BadRequest(422, f"unknown {key} {v!r}; choose one of {choices}")
    return v


def options_field(data: dict, key: str = "options") -> dict:
    """A dict of rules options (``{name: int | str | bool}``); the game checks the names and values."""
    v = data.get(key) or {}
    if not isinstance(v, dict):
        raise BadRequest(422, f"{key} must be a JSON object of rules options, not {type(v).__name__}")
    for k, x in v.items():
        if not isinstance(x, (bool, int, str)):
            raise BadRequest(422, f"option {k!r} must be an integer, a string or a bool, not {type(x).__name__}")
    return dict(v)
