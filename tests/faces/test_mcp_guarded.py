"""How MCP tools report failures: unit tests of faces.mcp_tools._guarded."""

from __future__ import annotations

import pytest

from hive_rpc.client import HubUnreachable, RemoteError
from hive_rpc.core.errors import InvalidAnswer
from hive_rpc.faces.mcp_tools import _guarded


async def _raise(error: BaseException) -> object:
    raise error


@pytest.mark.parametrize(
    ("error", "text"),
    [
        (InvalidAnswer("answer must be one of the choices"), "answer must be one of the options"),
        (RemoteError(-32004, "send answer null to decline"), "leave decision out to decline"),
        (
            HubUnreachable("lost the hub; a new hub starts with the next call"),
            "lost the hub; a new hub starts with the next call",
        ),
        (
            ExceptionGroup("wrapped", [HubUnreachable("no hub")]),
            "no hub",
        ),
    ],
)
async def test_refusals_and_a_lost_hub_become_tool_errors(error: Exception, text: str) -> None:
    result = await _guarded(_raise(error))  # type: ignore[arg-type]
    assert result.is_error
    assert result.content[0].text == text  # type: ignore[union-attr]


async def test_other_errors_propagate() -> None:
    with pytest.raises(KeyError):
        await _guarded(_raise(KeyError("bug")))  # type: ignore[arg-type]
