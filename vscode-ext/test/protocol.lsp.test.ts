/**
 * Protocol tests against the REAL `hive-rpc lsp` sidecar and a REAL hub (no
 * mocks), with vscode-jsonrpc over the sidecar's stdio, as
 * vscode-languageclient does; agents are played by the `hive-rpc` CLI. The
 * harness (hub, windows, CLI, environment variables) is in test/lspHarness.ts.
 * The agent sessions are followed by the extension's own SessionFeed
 * (src/sessions.ts) on the window, as the Sessions view is.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { MessageSignature } from 'vscode-jsonrpc';
import type { HubClient } from '../src/hubClient';
import type { ConnectionParams, PromptRecord } from '../src/protocol';
import { ServerNotifications } from '../src/protocol';
import { SessionFeed, SessionStore } from '../src/sessions';
import {
  ask,
  cli,
  hubProcess,
  Inbox,
  pollJson,
  restartHub,
  rpcCode,
  skip,
  startHub,
  stopHub,
  TIMEOUT_MS,
  VIA_HUB_SOCKET,
  Window,
} from './lspHarness';

/** Ask as the agent `agent` with the CLI; returns the prompt id. */
async function askAs(agent: string, question: string): Promise<string> {
  const r = await cli('ask', question, '--agent', agent, '--json');
  assert.equal(r.code, 0, `hive-rpc ask failed: ${r.stderr}`);
  return (JSON.parse(r.stdout) as { id: string }).id;
}

/**
 * The window's sessions as the extension keeps them: a SessionFeed on the
 * window's HubClient, with the requests it sends (there should be none).
 */
function sessionsOf(w: Window): { store: SessionStore; feed: SessionFeed; asked: string[]; connections: Inbox<ConnectionParams> } {
  const client = w.hubClient();
  const asked: string[] = [];
  const recording: HubClient = {
    ...client,
    sendRequest: <R>(type: MessageSignature, params?: unknown): Promise<R> => {
      asked.push(type.method);
      return w.request<R>(type.method, params as object | undefined);
    },
  };
  const store = new SessionStore();
  const feed = new SessionFeed(recording, store);
  const connections = new Inbox<ConnectionParams>();
  client.onNotification(ServerNotifications.connection, (p) => connections.push(p));
  return { store, feed, asked, connections };
}

/** Wait until the store satisfies `ok`, checked at each of its changes. */
function until(store: SessionStore, ok: () => boolean, what: string, ms = TIMEOUT_MS): Promise<void> {
  if (ok()) {
    return Promise.resolve();
  }
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      sub.dispose();
      reject(new Error(`timed out waiting for ${what}; the list: ${JSON.stringify(store.records().map((r) => [r.agent_id, r.state]))}`));
    }, ms);
    const sub = store.onDidChange(() => {
      if (ok()) {
        clearTimeout(timer);
        sub.dispose();
        resolve();
      }
    });
  });
}

describe('hive-rpc lsp against a real hub', { skip, concurrency: false }, () => {
  before(startHub);
  after(stopHub);

  test('initialize answers with the server capabilities', { skip: VIA_HUB_SOCKET }, async () => {
    const w = await Window.open();
    const result = await w.initialize();
    assert.ok(result && typeof result.capabilities === 'object', `initialize result: ${JSON.stringify(result)}`);
    w.close();
  });

  test('subscribe, receive a CLI question, answer it with hive/respond, the CLI poll gets it', async () => {
    const w = await Window.open();
    const sub = await w.subscribed();
    assert.equal(sub.subscribed, true);
    const id = await ask('Deploy?', '--choices', 'yes,no');
    const prompt = await w.prompts.wait((p) => p.id === id, `hive/prompt ${id}`);
    assert.equal(prompt.question, 'Deploy?');
    assert.deepEqual(prompt.choices, ['yes', 'no']);
    assert.equal(prompt.agent_id, 'tester');
    assert.equal(prompt.status, 'pending');
    const done = await w.request<PromptRecord>('hive/respond', { id, answer: 'yes', by: 'vscode-test' });
    assert.equal(done.status, 'responded');
    assert.equal(done.answer, 'yes');
    // The window that answered also gets the dismiss.
    const dismiss = await w.dismisses.wait((d) => d.id === id, `hive/dismiss ${id}`);
    assert.deepEqual(dismiss, { id, status: 'responded', by: 'vscode-test', action: 'accept', unseen: false });
    const polled = await pollJson(id);
    assert.equal(polled.code, 0);
    assert.equal(polled.record.status, 'responded');
    assert.equal(polled.record.answer, 'yes');
    assert.equal(polled.record.by, 'vscode-test');
    const text = await cli('poll', id);
    assert.equal(text.stdout.trim(), 'yes');
    w.close();
  });

  test('subscribe replays the pending prompts, then hive/list agrees', async () => {
    const id = await ask('Which branch?');
    const w = await Window.open();
    const sub = await w.subscribed();
    assert.ok((sub.pending ?? 0) >= 1, `pending: ${sub.pending}`);
    const p = await w.prompts.wait((r) => r.id === id, `replayed hive/prompt ${id}`);
    assert.equal(p.choices, null);
    const list = await w.request<PromptRecord[]>('hive/list');
    assert.ok(list.some((r) => r.id === id));
    await w.request('hive/cancel', { id, by: 'cleanup' });
    await w.dismisses.wait((d) => d.id === id && d.status === 'cancelled', 'the cancel dismiss');
    w.close();
  });

  test('answered elsewhere: hive/dismiss arrives, and a late respond gets -32002', async () => {
    const w = await Window.open();
    await w.subscribed();
    const id = await ask('Rebase onto?');
    await w.prompts.wait((p) => p.id === id, `hive/prompt ${id}`);
    const answered = await cli('answer', id, 'main', '--by', 'bob');
    assert.equal(answered.code, 0, answered.stderr);
    const d = await w.dismisses.wait((x) => x.id === id, `hive/dismiss ${id}`);
    assert.deepEqual(d, { id, status: 'responded', by: 'bob', action: 'accept', unseen: false });
    await assert.rejects(w.request('hive/respond', { id, answer: 'dev' }), (err) => {
      assert.equal(rpcCode(err), -32002);
      return true;
    });
    w.close();
  });

  test('a refused answer is -32004 and the prompt stays pending; decline works', async () => {
    const w = await Window.open();
    await w.subscribed();
    const id = await ask('Pick one', '--choices', 'a,b');
    await w.prompts.wait((p) => p.id === id, `hive/prompt ${id}`);
    await assert.rejects(w.request('hive/respond', { id, answer: 'c' }), (err) => {
      assert.equal(rpcCode(err), -32004);
      assert.match((err as Error).message, /a|b/);
      return true;
    });
    assert.equal((await w.request<PromptRecord>('hive/poll', { id })).status, 'pending');
    const declined = await w.request<PromptRecord>('hive/respond', { id, action: 'decline', by: 'vscode-test' });
    assert.equal(declined.action, 'decline');
    assert.equal(declined.answer, null);
    const polled = await pollJson(id);
    assert.equal(polled.record.action, 'decline');
    w.close();
  });

  test('hive/typing stops the countdown: the prompt outlives its original deadline', async () => {
    const w = await Window.open();
    await w.subscribed();
    const typedId = await ask('Typed into?', '--timeout', '3');
    const typed = await w.prompts.wait((p) => p.id === typedId, 'the typed prompt');
    // The first keystroke, as the extension sends it: a notification.
    await w.conn.sendNotification('hive/typing', { id: typedId });
    // A control prompt with the same countdown, asked later, that nobody types into.
    const controlId = await ask('Left alone?', '--timeout', '3');
    const control = await w.prompts.wait((p) => p.id === controlId, 'the control prompt');
    assert.ok(control.deadline_at >= typed.deadline_at, 'the control prompt was asked later');
    // The notification gets no response: wait until the hub shows it applied.
    let record = await w.request<PromptRecord>('hive/poll', { id: typedId });
    for (let i = 0; record.typing_at === null && i < 100; i++) {
      await new Promise((r) => setTimeout(r, 50));
      record = await w.request<PromptRecord>('hive/poll', { id: typedId });
    }
    assert.notEqual(record.typing_at, null, 'hive/typing was applied');
    assert.equal(record.deadline_at, record.max_deadline_at);
    // The hub's own clock: the control prompt, asked after, expires at its deadline.
    const expired = await w.dismisses.wait((d) => d.id === controlId, 'the control prompt to expire', 15_000);
    assert.equal(expired.status, 'expired');
    const control2 = await pollJson(controlId);
    assert.ok(control2.record.expired_at! >= typed.deadline_at, 'we are past the original deadline');
    const after2 = await w.request<PromptRecord>('hive/poll', { id: typedId });
    assert.equal(after2.status, 'pending');
    assert.equal(w.dismisses.items.some((d) => d.id === typedId), false);
    await w.request('hive/respond', { id: typedId, answer: 'done' });
    w.close();
  });

  test('two windows race to respond: exactly one wins, the other gets -32002', async () => {
    const w1 = await Window.open();
    const w2 = await Window.open();
    await Promise.all([w1.subscribed(), w2.subscribed()]);
    const id = await ask('Who is first?');
    await Promise.all([
      w1.prompts.wait((p) => p.id === id, 'window 1 prompt'),
      w2.prompts.wait((p) => p.id === id, 'window 2 prompt'),
    ]);
    const results = await Promise.allSettled([
      w1.request<PromptRecord>('hive/respond', { id, answer: 'one', by: 'w1' }),
      w2.request<PromptRecord>('hive/respond', { id, answer: 'two', by: 'w2' }),
    ]);
    const won = results.filter((r) => r.status === 'fulfilled');
    const lost = results.filter((r) => r.status === 'rejected');
    assert.equal(won.length, 1, JSON.stringify(results));
    assert.equal(lost.length, 1);
    assert.equal(rpcCode((lost[0] as PromiseRejectedResult).reason), -32002);
    const winner = (won[0] as PromiseFulfilledResult<PromptRecord>).value;
    const polled = await pollJson(id);
    assert.equal(polled.record.answer, winner.answer);
    assert.equal(polled.record.by, winner.by);
    // Both windows learn that it is closed.
    await w1.dismisses.wait((d) => d.id === id, 'window 1 dismiss');
    await w2.dismisses.wait((d) => d.id === id, 'window 2 dismiss');
    w1.close();
    w2.close();
  });

  test('shutdown + exit of one window leaves the hub and the other window working', async () => {
    const w1 = await Window.open();
    const w2 = await Window.open();
    await Promise.all([w1.subscribed(), w2.subscribed()]);
    const code = await w1.shutdown();
    assert.equal(code, 0, `lsp exit code after shutdown+exit; stderr:\n${w1.stderr}`);
    const status = await cli('status', '--json');
    assert.equal(status.code, 0, status.stderr);
    assert.equal(hubProcess()?.exitCode, null, 'the hub is still running');
    const id = await ask('Still there?');
    await w2.prompts.wait((p) => p.id === id, 'window 2 prompt after window 1 left');
    const r = await w2.request<PromptRecord>('hive/respond', { id, answer: 'yes', by: 'w2' });
    assert.equal(r.status, 'responded');
    assert.equal((await pollJson(id)).record.answer, 'yes');
    w2.close();
  });
  test('hive/session through the sidecar: the replay, then each change and removal, with no request', async () => {
    const replayed = await askAs('lsp-replayed', 'Asked before the window subscribed?');
    const w = await Window.open();
    await w.initialize();
    const { store, feed, asked } = sessionsOf(w);
    const sub = await w.request<{ subscribed: boolean }>('hive/subscribe', { sessions: true });
    assert.equal(sub.subscribed, true);
    // The hub's first notifications: every session it keeps.
    await until(store, () => store.get('lsp-replayed')?.state === 'waiting', 'the replayed session');
    assert.deepEqual(store.get('lsp-replayed')?.prompt_ids, [replayed]);
    // A new one, as it happens.
    const live = await askAs('lsp-live', 'Asked while the window follows?');
    await until(store, () => store.get('lsp-live')?.state === 'waiting', 'the live session');
    assert.equal(store.get('lsp-live')?.questions, 1);
    // Known only by its question, a session leaves when it closes: hive/sessionRemoved.
    for (const id of [live, replayed]) {
      const answered = await cli('answer', id, 'done', '--by', 'vscode-test');
      assert.equal(answered.code, 0, answered.stderr);
    }
    await until(store, () => !store.get('lsp-live') && !store.get('lsp-replayed'), 'both sessions to leave');
    assert.deepEqual(asked, [], 'the list came by push: no hive/sessions');
    feed.dispose();
    w.close();
  });

  test('a new hub: the sidecar says it is connected again, and its replay replaces the list', { skip: VIA_HUB_SOCKET }, async () => {
    const w = await Window.open();
    await w.initialize();
    const { store, feed, asked, connections } = sessionsOf(w);
    await w.request('hive/subscribe', { sessions: true });
    await askAs('lsp-old-hub', 'Asked of the hub that goes?');
    await until(store, () => store.get('lsp-old-hub')?.state === 'waiting', "the old hub's session");
    const sizes: number[] = [];
    store.onDidChange(() => sizes.push(store.size));

    // A hub on the same data: it keeps the question, and so the session. The list
    // is emptied at the sidecar's hive/connection, and the replay, which comes
    // after it, brings the session back (a replay before it would be lost).
    await restartHub(false);
    await connections.wait((c) => c.connected === true, 'the sidecar to find the hub again', 3 * TIMEOUT_MS);
    await until(store, () => store.get('lsp-old-hub')?.state === 'waiting', 'the session, replayed');
    assert.equal(sizes[0], 0, 'emptied first, then filled from the replay');

    // A hub that knows nothing of it: it never sends its removal, and the list is its own.
    connections.items.length = 0;
    await restartHub(true);
    await connections.wait((c) => c.connected === true, 'the sidecar to find the new hub', 3 * TIMEOUT_MS);
    const after = await askAs('lsp-new-hub', 'Asked of the new hub?');
    await until(store, () => store.get('lsp-new-hub')?.state === 'waiting', "the new hub's session");
    assert.deepEqual(store.records().map((r) => r.agent_id), ['lsp-new-hub'], "the old hub's session is gone");
    assert.deepEqual(asked, [], 'the list came by push: no hive/sessions');
    await w.request('hive/cancel', { id: after, by: 'cleanup' });
    feed.dispose();
    w.close();
  });
});
