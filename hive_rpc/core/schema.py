"""Flat answer schemas in the shape of MCP elicitation's ``requestedSchema``.

An elicitation schema is deliberately small: one object whose properties are
primitives (string, number, integer, boolean), single-choice enums, or a
multi-select (array of enum).  Beyond it, one extension: an ``anyOf`` of consts may
hold one ``{"type": "string"}`` entry, meaning "or text of the human's own" (JSON
Schema reads it the same way), for questions that offer a typed answer besides their
options, as Claude Code's own do.  We check the schema when the question is asked, so a
bad schema is the asking agent's error, and check the answer against it when the
human replies, so a bad answer is the answerer's error and the prompt stays pending.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from hive_rpc.core import limits
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
_URI_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*")
"""Matched with ``fullmatch`` on the part before the first colon: one character class
and one star, nothing to backtrack into."""
_OWN_TEXT_KEYS = frozenset({"type", "title", "description"})
"""What the free-text entry of an ``anyOf`` may hold (``allows_own_text``)."""
FORMAT_MAX_CHARS = {"email": 254, "uri": 8192, "date": 64, "date-time": 64}
"""Longest value each ``format`` can take, checked before any parsing: an email
address is at most 254 characters (RFC 5321), and nobody types a longer URI."""


def check_schema(schema: object) -> dict[str, Any]:
    """Return ``schema`` if it is a flat elicitation schema, else raise InvalidParams."""
    if not isinstance(schema, Mapping):
        raise InvalidParams('schema must be a JSON object like {"type": "object", ...}')
    limits.check_value(
        schema,
        "schema",
        max_total_chars=limits.MAX_SCHEMA_CHARS,
        total_limit="schema_chars",
    )
    if schema.get("type") != "object":
        raise InvalidParams('schema.type must be "object" (a flat elicitation schema)')
    props = schema.get("properties")
    if not isinstance(props, Mapping) or not props:
        raise InvalidParams("schema.properties must be a non-empty object of fields")
    if len(props) > limits.MAX_SCHEMA_PROPERTIES:
        raise limits.LimitError("schema", "schema_properties", f"{len(props):,} properties")
    for name, prop in props.items():
        _check_property(str(name), prop)
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        raise InvalidParams("schema.required must be a list of property names")
    unknown = [r for r in required if r not in props]
    if unknown:
        raise InvalidParams(f"schema.required names unknown properties: {', '.join(unknown)}")
    return dict(schema)


def _is_own_text(option: object) -> bool:
    """Whether an ``anyOf`` entry is the free-text one: ``{"type": "string"}`` with at
    most a title and description, the human's own answer beside the consts."""
    return (
        isinstance(option, Mapping)
        and option.get("type") == "string"
        and set(option) <= _OWN_TEXT_KEYS
    )


def _enum_values(name: str, prop: Mapping[str, Any]) -> list[Any] | None:
    if "enum" in prop:
        values = prop["enum"]
        if not isinstance(values, list) or not values:
            raise InvalidParams(f"schema property {name!r}: enum must be a non-empty list")
        _check_choice_count(name, values)
        return values
    for key in ("oneOf", "anyOf"):
        if key in prop:
            options = prop[key] if isinstance(prop[key], list) else []
            consts = [o for o in options if isinstance(o, Mapping) and "const" in o]
            own = [o for o in options if _is_own_text(o)] if key == "anyOf" else []
            if not consts or len(consts) + len(own) != len(options) or len(own) > 1:
                raise InvalidParams(
                    f'schema property {name!r}: {key} must be a list of {{"const": ...}} objects'
                    + (' and at most one {"type": "string"}' if key == "anyOf" else "")
                )
            _check_choice_count(name, consts)
            return [o["const"] for o in consts]
    return None


def allows_own_text(prop: Mapping[str, Any]) -> bool:
    """Whether a checked property (or an array's items) also takes text of the
    human's own: its ``anyOf`` has the free-text entry."""
    options = prop.get("anyOf")
    return isinstance(options, list) and any(_is_own_text(o) for o in options)


def _own_text(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _check_choice_count(name: str, values: list[Any]) -> None:
    if len(values) > limits.MAX_CHOICES:
        raise limits.LimitError(f"schema property {name!r}", "choices", f"{len(values):,} choices")


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
        own = allows_own_text(prop["items"])
        bad = [v for v in value if v not in allowed and not (own and _own_text(v))]
        if bad:
            raise InvalidAnswer(f"{name!r}: {bad!r} not among {allowed!r}")
        if len(set(map(repr, value))) != len(value):
            raise InvalidAnswer(f"{name!r}: each choice may be picked once")
        _check_bounds(name, len(value), prop.get("minItems"), prop.get("maxItems"), "items")
        return
    _check_type(name, kind, value)
    choices = _enum_values(name, prop)
    own = allows_own_text(prop) and _own_text(value)
    if choices is not None and value not in choices and not own:
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
        "number": isinstance(value, int | float) and not isinstance(value, bool),
    }[kind]
    if not ok:
        raise InvalidAnswer(f"{name!r} must be a {kind}, got {type(value).__name__}")
    if isinstance(value, int) and not isinstance(value, bool) and not limits.fits_double(value):
        # Compared with float bounds it would raise OverflowError: the client's error.
        raise limits.LimitError(repr(name), "int_bits", "an integer too large for a double")
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidAnswer(f"{name!r} must be a finite {kind}")


def _check_bounds(name: str, n: float, lo: object, hi: object, unit: str) -> None:
    suffix = f" {unit}" if unit else ""
    if isinstance(lo, int | float) and n < lo:
        raise InvalidAnswer(f"{name!r} must be at least {lo}{suffix}")
    if isinstance(hi, int | float) and n > hi:
        raise InvalidAnswer(f"{name!r} must be at most {hi}{suffix}")


def _check_format(name: str, fmt: object, value: str) -> None:
    """Every check is linear in ``value`` and runs only on a value no longer than its
    format allows: an answer is client text, and a backtracking pattern on it (the
    old email regex took 30 s on 60,000 dots) freezes every client of the hub."""
    if fmt is None or not isinstance(fmt, str):
        return
    cap = FORMAT_MAX_CHARS.get(fmt)
    if cap is not None and len(value) > cap:
        raise InvalidAnswer(
            f"{name!r} must be a valid {fmt} of at most {cap} characters, "
            f"got {len(value):,} characters"
        )
    ok = True
    if fmt == "email":
        ok = is_email(value)
    elif fmt == "uri":
        ok = is_uri(value)
    elif fmt in ("date", "date-time"):
        # Imported here: the permission hook loads this module (through core/prompt.py),
        # few answers are dates, and datetime was 1 to 5 ms of the hook's start.
        from datetime import date, datetime

        ok = _parses(date.fromisoformat if fmt == "date" else datetime.fromisoformat, value)
    if not ok:
        raise InvalidAnswer(f"{name!r} must be a valid {fmt}, got {value!r}")


def _has_space(value: str) -> bool:
    return any(c.isspace() for c in value)


def is_email(value: str) -> bool:
    """``local@domain.tld``: one ``@``, no whitespace, a dot inside the domain.  A
    split, not a regex: linear whatever the input."""
    local, at, domain = value.partition("@")
    if not at or not local or "@" in domain or _has_space(value):
        return False
    dot = domain.find(".", 1)
    return 0 < dot < len(domain) - 1


_NOT_IN_HOST = frozenset('[]<>"{}|\\^`')
"""Characters RFC 3986 allows in no host name (``[`` and ``]`` only around an IP
literal)."""


def is_uri(value: str) -> bool:
    """``scheme:rest``: an RFC 3986 scheme, a colon, then no whitespace; with an
    authority (``//``), one the standard library's parser reads, with a numeric port
    and a host that is a name or a bracketed IP literal.  ``http://`` and 8,000
    ``[`` passed the split alone.  Every step is linear in ``value``."""
    scheme, colon, rest = value.partition(":")
    if not (colon and rest and _URI_SCHEME.fullmatch(scheme)) or _has_space(rest):
        return False
    if not rest.startswith("//"):
        return True
    # Imported here, as datetime above: the permission hook loads this module.
    from urllib.parse import urlsplit

    try:
        _ = urlsplit(value).port  # raises for unbalanced brackets or a port not a number
    except ValueError:
        return False
    host = rest[2:].partition("/")[0].partition("?")[0].partition("#")[0].rpartition("@")[2]
    if host.startswith("["):
        literal, close, after = host[1:].partition("]")
        return bool(close) and (not after or after.startswith(":")) and _is_ip_literal(literal)
    return not any(c in _NOT_IN_HOST for c in host)


def _is_ip_literal(literal: str) -> bool:
    """An IPv6 address, or RFC 3986's ``vX.`` form for a future one."""
    if literal[:1] in ("v", "V"):
        version, dot, address = literal[1:].partition(".")
        return bool(dot and address and version) and all(c in _HEX for c in version)
    from ipaddress import IPv6Address

    return _parses(IPv6Address, literal.replace("%25", "%", 1))


_HEX = frozenset("0123456789abcdefABCDEF")


def _parses(parse: Any, value: str) -> bool:
    try:
        parse(value)
    except ValueError:
        return False
    return True
