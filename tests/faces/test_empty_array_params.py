"""``"params": []``, what Neovim's ``vim.lsp`` sends for an empty Lua table, is "no
params" on the editor socket and on ``hive-rpc lsp``; a non-empty array is still
refused, and a method with required params still names the missing one."""

from __future__ import annotations

import trio
from test_lsp import lsp

from hive_rpc.client.async_client import HubClient
from hive_rpc.hub import HubConfig
from hive_rpc.protocol.framing import encode_frame
from hive_rpc.protocol.jsonrpc import INVALID_PARAMS, ErrorResponse, Response, RpcError, dumps
from hive_rpc.service import HubService


def neovim_request(msg_id: int, method: str, params: object) -> bytes:
    return encode_frame(dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}))


async def test_editor_socket_takes_an_empty_array_as_no_params(
    hub: HubService, client: HubClient
) -> None:
    replies = []
    with trio.fail_after(10):
        for msg_id, method, params in [
            (1, "hive/list", []),
            (2, "hive/status", []),
            (3, "hive/list", [10]),
            (4, "hive/ask", []),
        ]:
            await client.send_raw(neovim_request(msg_id, method, params))
            replies.append(await client.next_message())
    listed, status, positional, ask = replies
    assert isinstance(listed, Response)
    assert listed.result == []
    assert isinstance(status, Response)
    assert status.result["pid"]
    assert isinstance(positional, ErrorResponse | RpcError)
    assert positional.code == INVALID_PARAMS
    assert isinstance(ask, ErrorResponse)
    assert (ask.code, ask.message) == (
        INVALID_PARAMS,
        "hive/ask: missing required parameter 'question'",
    )


async def test_lsp_face_takes_an_empty_array_as_no_params(
    hub: HubService, hub_config: HubConfig
) -> None:
    async with lsp(hub_config, "--no-start") as window:
        await window.initialize()
        listed = await window.exchange(91, neovim_request(91, "hive/list", []))
        subscribed = await window.exchange(92, neovim_request(92, "hive/subscribe", []))
        positional = await window.exchange(93, neovim_request(93, "hive/list", [10]))
    assert isinstance(listed, Response)
    assert listed.result == []
    assert isinstance(subscribed, Response)
    assert subscribed.result == {"subscribed": True, "pending": 0}
    assert isinstance(positional, ErrorResponse)
    assert positional.code == INVALID_PARAMS
