"""Q1+Q2: stdio subprocess server under trio; SDK Client on trio; legacy vs auto (2026-07-28)."""
import json, sys, warnings
import trio
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp_types import Implementation

PY = "/tmp/mcpenv/bin/python"
params = StdioServerParameters(command=PY, args=["/tmp/mcpx/server_stdio.py"])


def show(label, r):
    print(f"  {label}: is_error={r.is_error} structured={json.dumps(r.structured_content)} "
          f"text={[c.text for c in r.content if c.type == 'text']!r}")


async def run(mode):
    print(f"=== mode={mode}")
    async with Client(params, mode=mode, client_info=Implementation(name="agent-7", version="1.2")) as c:
        print("  negotiated protocol_version:", c.protocol_version, "server_info:", c.server_info and c.server_info.name)
        tools = {t.name: t for t in (await c.list_tools()).tools}
        print("  outputSchema make_ask:", json.dumps(tools["make_ask"].output_schema)[:120])
        print("  outputSchema plain_dict:", tools["plain_dict"].output_schema)
        print("  inputSchema make_ask:", json.dumps(tools["make_ask"].input_schema)[:160])
        show("make_ask", await c.call_tool("make_ask", {"title": "t", "votes": 3, "tags": ["a"]}))
        show("stat_td", await c.call_tool("stat_td", {"name": "abc"}))
        show("plain_dict", await c.call_tool("plain_dict", {"x": 1}))
        show("typed_dict", await c.call_tool("typed_dict", {"x": 1}))
        show("just_int", await c.call_tool("just_int", {"x": 21}))
        show("custom_result", await c.call_tool("custom_result", {"x": 5}))
        show("fail_tool", await c.call_tool("fail_tool", {"msg": "bad input"}))
        show("crash_tool", await c.call_tool("crash_tool", {}))
        show("custom_error_result", await c.call_tool("custom_error_result", {"msg": "exact text"}))
        show("bad args (votes='x')", await c.call_tool("make_ask", {"title": "t", "votes": "x"}))
        show("missing arg", await c.call_tool("make_ask", {}))
        show("unknown tool", await c.call_tool("nope", {}))
        try:
            await c.call_tool("protocol_error_tool", {})
        except MCPError as e:
            print(f"  protocol_error_tool -> MCPError code={e.code} msg={e.message!r} data={e.data}")
        show("whoami", await c.call_tool("whoami", {}))
        show("whoami#2", await c.call_tool("whoami", {}))


async def main():
    warnings.simplefilter("ignore")
    await run("legacy")
    await run("auto")
    await run("2026-07-28")

trio.run(main)
