// A scripted ACP agent on the SDK's agent side, for tests/acp: on each prompt it asks
// session/request_permission for a shell command whose arguments are only in the tool
// call's content (as Gemini CLI 0.61.0 sends them: no rawInput), and reports what it
// was told. It starts a child that never exits on its own, so the test can check the
// proxy ends the agent's whole process tree.
//
// usage: node scripted_agent.mjs REPORT_FILE
// REPORT_FILE gets one JSON object a line: started (pid, child), session/new and
// session/load (their params), permission (the outcome the agent got back).
import { appendFileSync } from "node:fs";
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { loadSdk } from "./sdk.mjs";

const acp = await loadSdk();
const report = (line) => appendFileSync(process.argv[2], JSON.stringify(line) + "\n");

const child = spawn(process.execPath, ["-e", "setInterval(() => {}, 1 << 30)"], {
  stdio: "ignore",
});
report({ event: "started", pid: process.pid, child: child.pid });

const COMMAND = "rm -rf build && npm test -- --grep 'permission'";

const app = acp
  .agent({ name: "scripted-agent" })
  .onRequest("initialize", () => ({
    protocolVersion: acp.PROTOCOL_VERSION,
    agentCapabilities: { loadSession: true },
    authMethods: [],
  }))
  .onRequest("session/new", (ctx) => {
    report({ event: "session/new", params: ctx.params });
    return { sessionId: "sess-4f1c2a9e" };
  })
  .onRequest("session/load", (ctx) => {
    report({ event: "session/load", params: ctx.params });
    return {};
  })
  .onRequest("session/prompt", async (ctx) => {
    const { sessionId } = ctx.params;
    const response = await ctx.client.request("session/request_permission", {
      sessionId,
      toolCall: {
        toolCallId: "call-1",
        title: "Shell",
        kind: "execute",
        status: "pending",
        content: [{ type: "content", content: { type: "text", text: COMMAND } }],
      },
      options: [
        { optionId: "proceed_once", name: "Allow", kind: "allow_once" },
        { optionId: "proceed_always", name: "Allow always", kind: "allow_always" },
        { optionId: "cancel", name: "Reject", kind: "reject_once" },
      ],
    });
    report({ event: "permission", outcome: response.outcome });
    return { stopReason: "end_turn" };
  });

// Like gemini --acp: when its client goes, the agent exits and leaves its child behind.
const connection = app.connect(
  acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)),
);
await connection.closed;
report({ event: "closed" });
process.exit(0);
