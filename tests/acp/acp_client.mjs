// An ACP client on the SDK's client side, for tests/acp: starts COMMAND (hive-rpc acp
// -- the scripted agent), opens a session with one MCP server of its own, sends one
// prompt, then closes the agent's stdin and waits for it to exit. Its own permission
// dialog (the handler) selects the agent's allow_always option, so an outcome of
// proceed_always means the request reached the client.
//
// usage: node acp_client.mjs CWD COMMAND [ARGS]
// stdout gets one JSON object a line: client-permission (the request's params, when
// the client's own handler was asked), session (the new session's id), stop (the
// prompt's stopReason), exit (the command's exit code and signal).
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { loadSdk } from "./sdk.mjs";

const acp = await loadSdk();
const say = (line) => process.stdout.write(JSON.stringify(line) + "\n");
const [cwd, command, ...args] = process.argv.slice(2);

const proxy = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"] });
const exited = new Promise((resolve) =>
  proxy.on("exit", (code, signal) => resolve({ event: "exit", code, signal })),
);

const app = acp
  .client({ name: "test-client" })
  .onRequest("session/request_permission", (ctx) => {
    say({ event: "client-permission", params: ctx.params });
    return { outcome: { outcome: "selected", optionId: "proceed_always" } };
  })
  .onNotification("session/update", () => {});

await app.connectWith(
  acp.ndJsonStream(Writable.toWeb(proxy.stdin), Readable.toWeb(proxy.stdout)),
  async (ctx) => {
    await ctx.request("initialize", {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: {},
    });
    const own = { name: "own", command: "/bin/true", args: [], env: [] };
    const session = await ctx.request("session/new", { cwd, mcpServers: [own] });
    say({ event: "session", sessionId: session.sessionId });
    const done = await ctx.request("session/prompt", {
      sessionId: session.sessionId,
      prompt: [{ type: "text", text: "run the tests" }],
    });
    say({ event: "stop", stopReason: done.stopReason });
  },
);
proxy.stdin.end();
say(await exited);
