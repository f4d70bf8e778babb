"""Flat answer schemas in the shape of MCP elicitation's ``requestedSchema``.

An elicitation schema is deliberately small: one object whose properties are
primitives (string, number, integer, boolean), single-choice enums, or a
multi-select (array of enum).  We check the schema when the question is asked, so a
bad schema is the asking agent's error, and check the answer against it when the
human replies, so a bad answer is the answerer's error and the prompt stays pending.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from datetime import date, datetime
from typing import Any

from hive_rpc.core.errors import InvalidAnswer, InvalidParams

PRIMITIVE_TYPES = frozenset({"string", "number", "integer", "boolean", "array"})
STRING_FORMATS = frozenset({"email", "uri", "date", "date-time"})
_PROPERTY_KEYS = frozenset(
    {
        "type",
        "title",
        "description",
        "default",
        "enum",
        "enumNames",
        "oneOf",
        "anyOf",
        "minLength",
        "maxLength",
        "format",
        "minimum",
        "maximum",
        "items",
        "minItems",
        "maxItems",
    }
)
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:\S+$")


def check_schema(schema: object) -> dict[str, Any]:
    """Return ``schema`` if it is a flat elicitation schema, else raise InvalidParams."""
    if not isinstance(schema, Mapping):
        raise InvalidParams('schema must be a JSON object like {"type": "object", ...}')
    if schema.get("type") != "object":
        raise InvalidParams('schema.type must be "object" (a flat elicitation schema)')
    props = schema.get("properties")
    if not isinstance(props, Mapping) or not props:
        raise InvalidParams("schema.properties must be a non-empty object of fields")
    for name, prop in props.items():
        _check_property(str(name), prop)
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        raise InvalidParams("schema.required must be a list of property names")
    unknown = [r for r in required if r not in props]
    if unknown:
        raise InvalidParams(f"schema.required names unknown properties: {', '.join(unknown)}")
    return dict(schema)


def _enum_values(name: str, prop: Mapping[str, Any]) -> list[Any] | None:
    if "enum" in prop:
        values = prop["enum"]
        if not isinstance(values, list) or not values:
            raise InvalidParams(f"schema property {name!r}: enum must be a non-empty list")
        return values
    for key in ("oneOf", "anyOf"):
        if key in prop:
            options = prop[key]
            if (
                not isinstance(options, list)
                or not options
                or not all(isinstance(o, Mapping) and "const" in o for o in options)
            ):
                raise InvalidParams(
                    f'schema property {name!r}: {key} must be a list of {{"const": ...}} objects'
                )
            return [o["const"] for o in options]
    return None


def _check_property(name: str, prop: object) -> None:
    if not isinstance(prop, Mapping):
        raise InvalidParams(f"schema property {name!r} must be an object")
    kind = prop.get("type")
    if kind not in PRIMITIVE_TYPES:
        raise InvalidParams(
            f"schema property {name!r}: type must be one of "
            f"{', '.join(sorted(PRIMITIVE_TYPES))} (nested objects are not allowed)"
        )
    extra = set(prop) - _PROPERTY_KEYS
    if extra:
        raise InvalidParams(
            f"schema property {name!r}: unsupported keys {', '.join(sorted(extra))}"
        )
    if kind == "array":
        items = prop.get("items")
        if not isinstance(items, Mapping) or _enum_values(f"{name}.items", items) is None:
            raise InvalidParams(
                f"schema property {name!r}: an array must be a multi-select with "
                "items.enum (or items.anyOf of consts)"
            )
    else:
        _enum_values(name, prop)
    fmt = prop.get("format")
    if fmt is not None and (kind != "string" or fmt not in STRING_FORMATS):
        raise InvalidParams(
            f"schema property {name!r}: format must be one of "
            f"{', '.join(sorted(STRING_FORMATS))} on a string"
        )


def validate_against(schema: Mapping[str, Any], answer: object) -> dict[str, Any]:
    """Return ``answer`` if it satisfies ``schema``; raise InvalidAnswer naming the field."""
    if not isinstance(answer, Mapping):
        raise InvalidAnswer("this prompt wants an object answer matching its schema")
    props: Mapping[str, Any] = schema["properties"]
    unknown = [k for k in answer if k not in props]
    if unknown:
        raise InvalidAnswer(f"answer has fields the schema lacks: {', '.join(map(str, unknown))}")
    missing = [r for r in schema.get("required", []) if r not in answer]
    if missing:
        raise InvalidAnswer(f"answer is missing required fields: {', '.join(missing)}")
    for key, value in answer.items():
        _validate_value(str(key), props[key], value)
    return dict(answer)


def _validate_value(name: str, prop: Mapping[str, Any], value: object) -> None:
    kind = prop["type"]
    if kind == "array":
        if not isinstance(value, list):
            raise InvalidAnswer(f"{name!r} must be a list of choices")
        allowed = _enum_values(name, prop["items"]) or []
        bad = [v for v in value if v not in allowed]
        if bad:
            raise InvalidAnswer(f"{name!r}: {bad!r} not among {allowed!r}")
        if len(set(map(repr, value))) != len(value):
            raise InvalidAnswer(f"{name!r}: each choice may be picked once")
        _check_bounds(name, len(value), prop.get("minItems"), prop.get("maxItems"), "items")
        return
    _check_type(name, kind, value)
    choices = _enum_values(name, prop)
    if choices is not None and value not in choices:
        raise InvalidAnswer(f"{name!r}: {value!r} is not one of {choices!r}")
    if kind == "string":
        assert isinstance(value, str)
        _check_bounds(name, len(value), prop.get("minLength"), prop.get("maxLength"), "chars")
        _check_format(name, prop.get("format"), value)
    elif kind in ("number", "integer"):
        assert isinstance(value, int | float)
        _check_bounds(name, value, prop.get("minimum"), prop.get("maximum"), "")


def _check_type(name: str, kind: str, value: object) -> None:
    ok = {
        "string": isinstance(value, str),
        "boolean": isinstance(value, bool),
        "integer": isinstance(value, int) and not isinstance(value, bool),
        "number": isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value),
    }[kind]
    if not ok:
        raise InvalidAnswer(f"{name!r} must be a {kind}, got {type(value).__name__}")


def _check_bounds(name: str, n: float, lo: object, hi: object, unit: str) -> None:
    suffix = f" {unit}" if unit else ""
    if isinstance(lo, int | float) and n < lo:
        raise InvalidAnswer(f"{name!r} must be at least {lo}{suffix}")
    if isinstance(hi, int | float) and n > hi:
        raise InvalidAnswer(f"{name!r} must be at most {hi}{suffix}")


def _check_format(name: str, fmt: object, value: str) -> None:
    if fmt is None:
        return
    ok = True
    if fmt == "email":
        ok = bool(_EMAIL.match(value))
    elif fmt == "uri":
        ok = bool(_URI.match(value))
    elif fmt == "date":
        ok = _parses(date.fromisoformat, value)
    elif fmt == "date-time":
        ok = _parses(datetime.fromisoformat, value)
    if not ok:
        raise InvalidAnswer(f"{name!r} must be a valid {fmt}, got {value!r}")


def _parses(parse: Any, value: str) -> bool:
    try:
        parse(value)
    except ValueError:
        return False
    return True
