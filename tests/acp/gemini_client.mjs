// An ACP client on the SDK's client side, for test_acp_gemini.py: starts COMMAND
// (hive-rpc acp -- gemini --acp), opens a session in CWD, sends PROMPT, then closes the
// command's stdin and waits for it to exit. Its own permission dialog (the handler)
// refuses: it selects the agent's reject_once option, so a request that reached the
// client runs nothing, and says so on stdout.
//
// usage: node gemini_client.mjs CWD PROMPT COMMAND [ARGS]
// SIGUSR1 makes it cancel the turn (session/cancel), as a user's "stop" does.
// stdout gets one JSON object a line: spawned (the command's pid), client-permission
// (the request's params, when the client's own handler was asked), session (the new
// session's id), cancel (sent), update (each session/update's update), stop (the prompt's
// stopReason), error (the connection failed: the command died), exit (the command's
// exit code and signal).
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { loadSdk } from "./sdk.mjs";

const acp = await loadSdk();
const say = (line) => process.stdout.write(JSON.stringify(line) + "\n");
const [cwd, prompt, command, ...args] = process.argv.slice(2);

const proxy = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"] });
const exited = new Promise((resolve) =>
  proxy.on("exit", (code, signal) => resolve({ event: "exit", code, signal })),
);
say({ event: "spawned", pid: proxy.pid });

const app = acp
  .client({ name: "test-client" })
  .onRequest("session/request_permission", (ctx) => {
    say({ event: "client-permission", params: ctx.params });
    const reject = ctx.params.options.find((o) => o.kind === "reject_once");
    return { outcome: { outcome: "selected", optionId: reject.optionId } };
  })
  .onNotification("session/update", (ctx) => {
    say({ event: "update", update: ctx.params.update });
  });

// A client whose agent dies mid-session gets no answer to its pending request (the
// SDK leaves it pending): the command's exit ends the wait too.
const died = exited.then(() => {
  throw new Error("the command exited mid-session");
});
try {
  await Promise.race([died, app.connectWith(
    acp.ndJsonStream(Writable.toWeb(proxy.stdin), Readable.toWeb(proxy.stdout)),
    async (ctx) => {
      await ctx.request("initialize", {
        protocolVersion: acp.PROTOCOL_VERSION,
        clientCapabilities: {},
      });
      const session = await ctx.request("session/new", { cwd, mcpServers: [] });
      say({ event: "session", sessionId: session.sessionId });
      // SIGUSR1 is the user pressing "stop": the client cancels the turn.
      process.on("SIGUSR1", () => {
        say({ event: "cancel" });
        ctx.notify("session/cancel", { sessionId: session.sessionId });
      });
      const done = await ctx.request("session/prompt", {
        sessionId: session.sessionId,
        prompt: [{ type: "text", text: prompt }],
      });
      say({ event: "stop", stopReason: done.stopReason });
    },
  )]);
} catch (e) {
  say({ event: "error", message: String(e?.message ?? e) });
}
proxy.stdin.end();
say(await exited);
