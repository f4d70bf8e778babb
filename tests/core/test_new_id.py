"""Prompt ids (core/prompt.new_id): 64-bit hex, short enough to type, and distinct."""

from __future__ import annotations

import string

from hive_rpc.core.prompt import new_id


def test_ids_are_sixteen_hex_digits_and_distinct() -> None:
    ids = [new_id() for _ in range(10_000)]
    assert all(len(i) == 16 and set(i) <= set(string.hexdigits.lower()) for i in ids)
    assert len(set(ids)) == len(ids)
