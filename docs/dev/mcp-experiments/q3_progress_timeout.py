"""Q3: progress notifications + read timeout semantics, stdio subprocess, trio."""
import math, sys, warnings
import trio
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

params = StdioServerParameters(command="/tmp/mcpenv/bin/python", args=["/tmp/mcpx/server_stdio.py"])


async def call_with_idle_timeout(client, name, args, idle, on_progress=None):
    """Workaround: an *inactivity* timeout that every progress notification re-arms."""
    with trio.CancelScope(deadline=trio.current_time() + idle) as scope:
        async def progress(p, total, msg):
            scope.deadline = trio.current_time() + idle        # re-arm on every progress
            if on_progress:
                await on_progress(p, total, msg)
        return await client.call_tool(name, args, read_timeout_seconds=None, progress_callback=progress)
    raise TimeoutError(f"{name}: no progress for {idle}s")      # reached only if scope cancelled


async def run(mode):
    print(f"=== mode={mode}")
    async with Client(params, mode=mode) as c:
        seen = []

        async def cb(p, total, msg):
            seen.append((p, total, msg))

        # 1) progress delivered to progress_callback
        r = await c.call_tool("slow", {"steps": 3, "delay": 0.1}, progress_callback=cb)
        print("  progress seen:", seen, "->", r.content[0].text)

        # 2) per-call read_timeout_seconds=1.0; tool takes 4 x 0.5s = 2s but reports progress each 0.5s
        seen.clear()
        t0 = trio.current_time()
        try:
            await c.call_tool("slow", {"steps": 4, "delay": 0.5}, read_timeout_seconds=1.0, progress_callback=cb)
            print("  UNEXPECTED success")
        except MCPError as e:
            print(f"  read_timeout=1.0 -> MCPError code={e.code} {e.message!r} after {trio.current_time()-t0:.2f}s; "
                  f"progress seen before timeout: {len(seen)}  => progress does NOT reset the timeout")

        # 3) workaround: idle timeout re-armed by progress
        seen.clear()
        t0 = trio.current_time()
        r = await call_with_idle_timeout(c, "slow", {"steps": 4, "delay": 0.5}, idle=1.0, on_progress=cb)
        print(f"  idle-timeout wrapper (1.0s idle, 2s tool): {r.content[0].text!r} in {trio.current_time()-t0:.2f}s, "
              f"progress={len(seen)}")

        # 4) wrapper still fires when progress stops
        try:
            await call_with_idle_timeout(c, "slow", {"steps": 1, "delay": 3}, idle=1.0)
        except TimeoutError as e:
            print("  idle-timeout wrapper, silent tool ->", e)

    # 5) session-wide default: Client(read_timeout_seconds=...) applies to EVERY request, incl. the handshake
    try:
        async with Client(params, mode=mode, read_timeout_seconds=1.5) as c:
            await c.call_tool("slow", {"steps": 4, "delay": 0.5}, progress_callback=cb)
    except BaseException as e:                      # escapes `async with Client` -> nested ExceptionGroup
        while isinstance(e, BaseExceptionGroup):
            e = e.exceptions[0]
        print(f"  Client(read_timeout_seconds=1.5) -> {type(e).__name__} code={getattr(e, 'code', None)} {e}")


async def main():
    warnings.simplefilter("ignore")
    await run("legacy")
    await run("auto")

trio.run(main)
