"""pytest on trio via anyio's plugin; in-process Client(MCPServer) in both eras."""
import sys, warnings
sys.path.insert(0, "/tmp/mcpx")
import pytest
import trio
from mcp import Client
import app as hive

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "trio"


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_structured_and_progress(mode):
    warnings.simplefilter("ignore")
    assert trio.lowlevel.current_trio_token() is not None      # really on trio
    seen = []
    async def cb(p, t, m): seen.append(p)
    async with Client(hive.mcp, mode=mode) as c:
        r = await c.call_tool("make_ask", {"title": "t", "votes": 1})
        assert r.structured_content == {"ask_id": "ask-t", "votes": 1, "tags": []}
        r = await c.call_tool("slow", {"steps": 2, "delay": 0.01}, progress_callback=cb)
        assert r.content[0].text == "done 2" and seen == [1.0, 2.0]
        r = await c.call_tool("fail_tool", {"msg": "x"})
        assert r.is_error and "nope: x" in r.content[0].text


async def test_inproc_cancel_runs_finally(tmp_path, monkeypatch):
    monkeypatch.setattr(hive, "MARKER", str(tmp_path / "m"))
    async with Client(hive.mcp, mode="auto") as c:
        with trio.move_on_after(0.2):
            await c.call_tool("hang", {"tag": "t"})
    assert "finally t" in (tmp_path / "m").read_text()
