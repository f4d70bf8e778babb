"""Immutable records for the codecs' events and messages, without ``dataclasses``.

Every one-shot command (``hive-rpc status``, the permission hook) decodes the hub's
replies with protocol/, so protocol/ is imported by every such process: importing
``dataclasses`` (which loads ``inspect``, ``ast``, ``dis`` and ``copy``) and generating
the methods of six classes were about 8 ms of ``status``'s start (docs/benchmarks.md,
CLI cold start).  A ``Frozen`` subclass names its fields in order in ``__match_args__``
(its ``__slots__`` too), declares their types, and sets them in ``__init__`` with
``init_field``; ``Frozen`` gives it what ``@dataclass(frozen=True, slots=True)`` did:
equality with the same class and equal fields, a hash of the fields, the dataclass's
repr, no assignment after ``__init__`` (``FrozenInstanceError``), copy and pickle.
"""

from __future__ import annotations

init_field = object.__setattr__
"""Sets a field in ``__init__``, past ``Frozen.__setattr__`` (as a frozen dataclass does)."""


class FrozenInstanceError(AttributeError):
    """A field of a record was assigned or deleted (dataclasses' error of that name)."""


class Frozen:
    """Base of a record whose fields are its ``__match_args__``, in order."""

    __slots__ = ()
    __match_args__: tuple[str, ...] = ()

    def _fields(self) -> tuple[object, ...]:
        return tuple([getattr(self, name) for name in self.__match_args__])

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, Frozen)
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__match_args__)
        return f"{type(self).__qualname__}({fields})"

    def __setattr__(self, name: str, value: object) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __reduce__(self) -> tuple[type[Frozen], tuple[object, ...]]:
        return type(self), self._fields()
