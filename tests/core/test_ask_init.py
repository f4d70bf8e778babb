"""``Ask.__init__`` is compiled (core/prompt._ask_init) rather than the dataclass's:
it must take exactly the dataclass's keyword-only parameters with their defaults,
set every field, and leave the record frozen."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import pytest

from hive_rpc.core.prompt import Ask


def test_the_signature_is_the_dataclass_fields_keywords_only() -> None:
    params = list(inspect.signature(Ask).parameters.values())
    fields = dataclasses.fields(Ask)
    assert [p.name for p in params] == [f.name for f in fields]
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params)
    assert [p.default for p in params] == [
        inspect.Parameter.empty if f.default is dataclasses.MISSING else f.default for f in fields
    ]
    assert all(f.default_factory is dataclasses.MISSING for f in fields)


def test_every_field_is_set_and_stays_frozen() -> None:
    values: dict[str, Any] = {f.name: f"v-{f.name}" for f in dataclasses.fields(Ask)}
    ask = Ask(**values)
    assert dataclasses.asdict(ask) == values
    assert ask == Ask(**values)
    assert dataclasses.replace(ask, question="other").question == "other"
    with pytest.raises(dataclasses.FrozenInstanceError):
        ask.question = "changed"  # type: ignore[misc]
    with pytest.raises(TypeError):
        Ask()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Ask("positional")  # type: ignore[call-arg]
