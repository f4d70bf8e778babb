/**
 * The prompt UI (src/promptFlow.ts) end to end against the REAL `hive-rpc lsp`
 * and a REAL hub, with only the `vscode` module MOCKED (test/vscode-mock.ts),
 * BECAUSE VS Code itself cannot be downloaded or run on this machine. The
 * sidecar is reached with vscode-jsonrpc (test/lspHarness.ts) behind the same
 * HubClient interface the extension gives the UI.
 */
import './register-vscode-mock';
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { PromptFlow } from '../src/promptFlow';
import { ask, cli, pollJson, skip, startHub, stopHub, Window } from './lspHarness';
import { FakeInputBox, FakeQuickPick, mock } from './vscode-mock';

/** Wait until `check` returns a value (the UI reacts to notifications asynchronously). */
async function eventually<T>(
  check: () => T | undefined | Promise<T | undefined>,
  what: string,
  ms = 15_000,
): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v !== undefined) {
      return v;
    }
    if (Date.now() > end) {
      throw new Error(`timed out waiting for ${what}`);
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}

function openInput(): FakeInputBox | undefined {
  const o = mock.open();
  return o instanceof FakeInputBox ? o : undefined;
}

function openPick(): FakeQuickPick | undefined {
  const o = mock.open();
  return o instanceof FakeQuickPick ? o : undefined;
}

describe('prompt UI (mocked vscode) with the real hive-rpc lsp', { skip, concurrency: false }, () => {
  let w: Window;
  let flow: PromptFlow;

  before(async () => {
    await startHub();
    mock.reset();
    w = await Window.open();
    // Countdown timers would keep the test process alive: a no-op timer is enough here.
    flow = new PromptFlow(w.hubClient(), undefined, {
      by: () => 'alice',
      timers: { setInterval: () => 0, clearInterval: () => undefined },
    });
    await w.subscribed();
  });

  after(async () => {
    flow?.dispose();
    await stopHub();
  });

  test('a CLI question opens an input box; typing stops the countdown on the hub; Enter answers', async () => {
    const id = await ask('Which branch?', '--timeout', '120');
    const box = await eventually(openInput, 'the input box');
    // Where the asker runs (the hub reads the CLI's working directory): after its name.
    const origin = (await pollJson(id)).record.origin;
    assert.equal(typeof origin, 'string');
    assert.equal(box.title, `Agent tester (${origin}) needs input`);
    assert.equal(box.prompt, 'Which branch?');
    assert.match(box.placeholder ?? '', /^Start typing to cancel auto-dismiss \(120s timeout\)\.\.\. (2m00s|1m5\ds) left$/);
    box.type('m');
    assert.doesNotMatch(box.placeholder ?? '', /left/);
    // hive/typing is a notification: wait until the hub shows it applied.
    const record = await eventually(async () => {
      const r = (await pollJson(id)).record;
      return r.typing_at !== null ? r : undefined;
    }, 'typing_at on the hub');
    assert.equal(record.deadline_at, record.max_deadline_at);
    box.type('ain');
    box.accept();
    const answered = await eventually(() => (flow.queue.has(id) ? undefined : true), 'the prompt to leave the queue');
    assert.ok(answered);
    const polled = await pollJson(id);
    assert.equal(polled.record.answer, 'main');
    assert.equal(polled.record.by, 'alice');
    assert.equal(mock.open(), undefined);
  });

  test('answered with the CLI while open: the box closes with a message', async () => {
    const id = await ask('Deploy?', '--choices', 'staging,prod');
    const pick = await eventually(openPick, 'the quick pick');
    assert.deepEqual(pick.labels(), ['staging', 'prod']);
    const r = await cli('answer', id, 'prod', '--by', 'bob');
    assert.equal(r.code, 0, r.stderr);
    await eventually(() => (pick.disposed ? true : undefined), 'the quick pick to close');
    assert.ok(mock.messages.some((m) => m.text === 'Hive: that question was answered by bob'));
    assert.equal(flow.queue.has(id), false);
  });

  test('decline and a schema answer reach the hub', async () => {
    const schema = JSON.stringify({
      type: 'object',
      properties: { env: { type: 'string', enum: ['staging', 'prod'] }, replicas: { type: 'integer', minimum: 1 } },
      required: ['env', 'replicas'],
    });
    const declineId = await ask('Rotate keys?');
    const box = await eventually(openInput, 'the input box');
    box.press('Decline');
    await eventually(() => (flow.queue.has(declineId) ? undefined : true), 'the decline');
    assert.equal((await pollJson(declineId)).record.action, 'decline');

    const id = await ask('Deploy how?', '--schema', schema);
    const pick = await eventually(openPick, 'the env pick');
    pick.pick('prod');
    pick.accept();
    const replicas = await eventually(openInput, 'the replicas box');
    replicas.type('3');
    replicas.accept();
    await eventually(() => (flow.queue.has(id) ? undefined : true), 'the schema answer');
    assert.deepEqual((await pollJson(id)).record.answer, { env: 'prod', replicas: 3 });
  });
});
