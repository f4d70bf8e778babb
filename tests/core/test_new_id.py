"""Prompt ids (core/prompt.new_id): drawn from ``os.urandom`` in batches, so they must
stay 64-bit hex, never repeat across batches or threads, and a forked child must not
hand out the ids its parent drew but had not used yet."""

from __future__ import annotations

import os
import string
import threading

from hive_rpc.core import prompt
from hive_rpc.core.prompt import new_id


def test_ids_are_sixteen_hex_digits_and_distinct_across_batches() -> None:
    ids = [new_id() for _ in range(5 * prompt._IDS_PER_DRAW + 7)]
    assert all(len(i) == 16 and set(i) <= set(string.hexdigits.lower()) for i in ids)
    assert len(set(ids)) == len(ids)


def test_a_forked_child_does_not_repeat_its_parents_ids() -> None:
    new_id()  # the parent now holds drawn ids it has not handed out
    assert prompt._ids, "a batch is held"
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child's side is read through the pipe
        try:
            os.write(write, " ".join(new_id() for _ in range(20)).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        childs = set(pipe.read().split())
    os.waitpid(child, 0)
    parents = {new_id() for _ in range(20)}
    assert len(childs) == 20
    assert childs.isdisjoint(parents)


def test_threads_never_share_an_id() -> None:
    drawn: list[list[str]] = [[] for _ in range(4)]

    def draw(into: list[str]) -> None:
        into.extend(new_id() for _ in range(5000))

    threads = [threading.Thread(target=draw, args=(into,)) for into in drawn]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    every = [i for into in drawn for i in into]
    assert len(set(every)) == len(every) == 20000
