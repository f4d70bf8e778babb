/**
 * Issue 27's logic with the `vscode` module MOCKED (test/vscode-mock.ts): the
 * announcement's text and links, the rule a lasting answer saves, Claude
 * Code's questions told from permissions, the deferred set kept across a
 * reload, drafts kept across Escape, "Not now" for all, the opt-in
 * auto-open's guards, hive/shown, and the expired-unseen trace. Logic only:
 * that the UI works is proven in code-server (tests/vscode/test_vscode_attention.py).
 */
import './register-vscode-mock';
import assert from 'node:assert/strict';
import { beforeEach, describe, test } from 'node:test';
import { announceMessage, linkChoices } from '../src/announceText';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Attention } from '../src/attention';
import { deferredStore } from '../src/deferredStore';
import { asksPermission, isClaudeQuestion } from '../src/promptDetail';
import { PromptFlow } from '../src/promptFlow';
import { PromptQueue } from '../src/queue';
import { confirmText } from '../src/confirmText';
import { Clock, FakeHub, FakeTimers, record, rpcError, settle } from './helpers';
import { FakeInputBox, FakeQuickPick, mock } from './vscode-mock';

const OWN = { type: 'string', title: 'Other: type your own answer' };

describe('what the announcement says', () => {
  test('few short choices are links; a permission or a detail only opens the box', () => {
    const clock = new Clock();
    const r = record(clock, { agent_id: 'deployer', question: 'Deploy?', choices: ['yes', 'no'], origin: '~/src/app' });
    const text = announceMessage(r, 2);
    assert.ok(text.startsWith('deployer (~/src/app) asks: Deploy? (+2 more waiting) — [yes](command:hive.answerWith?'));
    assert.ok(text.includes(`[Answer…](command:hive.answerPrompt?${encodeURIComponent(JSON.stringify([r.id]))})`));
    assert.ok(text.endsWith('[Not now](command:hive.deferAll?%5B%5D)'));
    assert.deepEqual(linkChoices(record(clock, { choices: ['a', 'b', 'c', 'd'] })), [], 'more than three');
    assert.deepEqual(linkChoices(record(clock, { choices: ['a', 'b'], kind: 'permission' })), []);
    assert.deepEqual(linkChoices(record(clock, { choices: ['a', 'b'], detail: 'x' })), []);
    assert.deepEqual(linkChoices(record(clock, { choices: ['a](command:evil)', 'b'] })), [], 'no link syntax');
  });

  test("an agent's text cannot add a link", () => {
    const r = record(new Clock(), { question: 'see [here](command:workbench.action.quit)' });
    assert.ok(!announceMessage(r, 0).includes('](command:workbench'));
  });
});

describe('permissions, Claude Code questions and the rule an answer saves', () => {
  const claudeQuestion = {
    kind: 'permission' as const,
    schema: { type: 'object' as const, properties: { q1: { type: 'string' as const, anyOf: [{ const: 'A' }, OWN as never] } } },
  };

  test("Claude Code's own questions are questions, not permissions", () => {
    assert.equal(isClaudeQuestion(claudeQuestion), true);
    assert.equal(asksPermission(claudeQuestion), false);
    assert.equal(asksPermission({ kind: 'permission', schema: null }), true);
    assert.equal(isClaudeQuestion({ kind: 'question', schema: claudeQuestion.schema }), false);
  });

  test("what an answer does is the question's own confirm text; other answers confirm nothing", () => {
    const says = 'This answer saves a rule: allow Bash(npm test), for every later request in this project (~/src/app).';
    const r = record(new Clock(), {
      kind: 'permission',
      choices: ['allow', 'always allow in this project'],
      confirm: [{ choice: 'always allow in this project', text: says }],
    });
    assert.equal(confirmText(r, 'always allow in this project'), says);
    assert.equal(confirmText(r, 'allow'), undefined);
    assert.equal(confirmText({ confirm: null }, 'always allow in this project'), undefined);
    assert.equal(confirmText({}, 'always allow in this project'), undefined);
  });
});

describe('the queue: deferred across a reload, drafts across Escape', () => {
  test('deferred ids are stored and come back deferred', () => {
    let stored: readonly string[] = [];
    const store = { get: () => stored, set: (ids: readonly string[]) => (stored = ids) };
    const clock = new Clock();
    const a = record(clock);
    const b = record(clock);
    const q = new PromptQueue(store);
    q.add(a);
    q.add(b);
    assert.equal(q.deferAll(), 2);
    assert.deepEqual([...stored].sort(), [a.id, b.id].sort());
    // The window reloads: a new queue from the same store.
    const again = new PromptQueue(store);
    again.add(a);
    assert.equal(again.get(a.id)?.deferred, true);
    again.remove(a.id);
    assert.deepEqual(stored, [b.id], 'a closed prompt is forgotten');
  });
});

describe('PromptFlow on the new model', () => {
  let hub: FakeHub;
  let clock: Clock;
  beforeEach(() => {
    mock.reset();
    hub = new FakeHub();
    clock = new Clock();
  });

  const flowWith = (options: ConstructorParameters<typeof PromptFlow>[2] = {}): PromptFlow =>
    new PromptFlow(hub, undefined, { by: () => 'alice', now: clock.now, timers: new FakeTimers(), ...options });

  test('off: nothing opens; Answer Next opens it and tells the hub it was shown', async () => {
    const flow = flowWith({ autoAsk: false });
    const r = record(clock, { question: 'Ship?' });
    hub.emit('hive/prompt', r);
    await settle();
    assert.equal(mock.open(), undefined);
    flow.answerNext();
    assert.ok(mock.open() instanceof FakeInputBox);
    await settle();
    assert.deepEqual(hub.sent('hive/shown').map((s) => s.params), [{ id: r.id }]);
    flow.dispose();
  });

  test('auto-open never opens while a terminal is open, and its pick has nothing pre-selected', async () => {
    let terminals = 1;
    const flow = flowWith({ terminalActive: () => terminals > 0 });
    hub.emit('hive/prompt', record(clock, { choices: ['yes', 'no'] }));
    assert.equal(mock.open(), undefined, 'a terminal is open');
    terminals = 0;
    flow.recheckAuto();
    const pick = mock.open() as FakeQuickPick;
    assert.ok(pick instanceof FakeQuickPick);
    assert.deepEqual(pick.activeItems, [], 'Enter alone accepts nothing');
    pick.accept();
    await settle();
    assert.deepEqual(hub.sent('hive/respond'), []);
    flow.dispose();
  });

  test('Escape opens nothing else; Not now defers them all; text typed comes back', async () => {
    const flow = flowWith();
    const a = record(clock, { question: 'A?' });
    hub.emit('hive/prompt', a);
    hub.emit('hive/prompt', record(clock, { question: 'B?' }));
    const box = mock.open() as FakeInputBox;
    box.type('half an ans');
    box.escape();
    await settle();
    assert.equal(mock.open(), undefined, 'the next one does not open at once');
    flow.deferAll();
    assert.equal(flow.queue.next({ includeDeferred: false }), undefined);
    await settle();
    assert.deepEqual(mock.openProgress(), [], 'nothing announced once all are deferred');
    flow.answerNext();
    assert.equal((mock.open() as FakeInputBox).value, 'half an ans');
    flow.dispose();
  });

  test('a choice link answers; a question gone meanwhile is said so, not answered', async () => {
    const flow = flowWith({ autoAsk: false });
    const r = record(clock, { choices: ['yes', 'no'] });
    hub.emit('hive/prompt', r);
    await flow.answerWith(r.id, 'no');
    assert.deepEqual(hub.sent('hive/respond')[0].params, { id: r.id, answer: 'no', by: 'alice' });
    await flow.answerWith(r.id, 'yes');
    assert.equal(hub.sent('hive/respond').length, 1);
    flow.dispose();
  });
});

describe('the expired-unseen trace', () => {
  test('listed at connect, cleared by id or all, and without the methods nothing breaks', async () => {
    const hub = new FakeHub();
    const clock = new Clock();
    const gone = { ...record(clock, { question: 'Quick?' }), status: 'expired' as const, unseen: true, expired_at: clock.t };
    hub.server = (method, params) => {
      if (method === 'hive/list') {
        return [gone];
      }
      if (method === 'hive/clearUnseen') {
        return { cleared: (params as { all?: boolean }).all ? 1 : 1 };
      }
      return {};
    };
    const attention = new Attention(hub);
    await attention.refresh();
    assert.deepEqual(attention.records().map((r) => r.id), [gone.id]);
    assert.equal(await attention.dismiss(gone.id), 1);
    assert.equal(attention.count, 0);
    attention.note(gone);
    attention.cleared(gone.id);
    assert.equal(attention.count, 0);
    // An older hub: -32601; nothing is asked again, nothing thrown.
    hub.server = () => {
      throw rpcError(-32601, 'method not found');
    };
    await attention.refresh();
    await attention.refresh();
    assert.equal(hub.sent('hive/list').length, 2, 'asked once more, then no longer');
    attention.shown('x');
    await settle();
    attention.shown('y');
    assert.equal(hub.sent('hive/shown').length, 1);
  });
});

describe('the deferred file', () => {
  test('kept in the workspace storage, read back by the next window', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hive-deferred-'));
    const context = { storageUri: { fsPath: path.join(dir, 'ws') }, globalStorageUri: { fsPath: dir } };
    const store = deferredStore(context as never)!;
    assert.deepEqual(store.get(), []);
    store.set(['a', 'b']);
    assert.deepEqual(deferredStore(context as never)!.get(), ['a', 'b']);
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
