/**
 * UI tests with a MOCKED `vscode` module (test/vscode-mock.ts), BECAUSE VS Code
 * itself cannot be downloaded or run on this machine. They drive
 * src/promptFlow.ts, src/statusBar.ts and src/pendingView.ts through the fake
 * input boxes, quick picks, status bar item and tree items, with a fake
 * language client (FakeHub), a fake clock and fake timers.
 */
import './register-vscode-mock';
import assert from 'node:assert/strict';
import { beforeEach, describe, test } from 'node:test';
import { PendingTreeProvider, promptIdOf } from '../src/pendingView';
import { PromptFlow } from '../src/promptFlow';
import { DECLINE_TOOLTIP } from '../src/promptSteps';
import type { PromptRecord } from '../src/protocol';
import { BURST_DELAY_MS, BURST_SIZE, HiveStatusBar } from '../src/statusBar';
import { Clock, FakeHub, FakeTimers, record, rpcError, settle } from './helpers';
import { FakeInputBox, FakeQuickPick, InputBoxValidationSeverity, mock, TreeItem } from './vscode-mock';

interface World {
  hub: FakeHub;
  clock: Clock;
  timers: FakeTimers;
  flow: PromptFlow;
}

function world(): World {
  mock.reset();
  const hub = new FakeHub();
  const clock = new Clock();
  const timers = new FakeTimers();
  const flow = new PromptFlow(hub, undefined, { by: () => 'alice', now: clock.now, timers });
  return { hub, clock, timers, flow };
}

function prompt(w: World, fields: Partial<PromptRecord> = {}): PromptRecord {
  const r = record(w.clock, fields);
  w.hub.emit('hive/prompt', r);
  return r;
}

function openBox(): FakeInputBox {
  const open = mock.open();
  assert.ok(open instanceof FakeInputBox, `expected an open input box, got ${open?.constructor.name}`);
  return open;
}

function openPick(): FakeQuickPick {
  const open = mock.open();
  assert.ok(open instanceof FakeQuickPick, `expected an open quick pick, got ${open?.constructor.name}`);
  return open;
}

function infos(): string[] {
  return mock.messages.filter((m) => m.level === 'info').map((m) => m.text);
}

describe('free-text prompt (input box)', () => {
  let w: World;
  beforeEach(() => {
    w = world();
  });

  test("the hub's own question is titled as the hub's, never as an agent's", () => {
    prompt(w, { agent_id: 'hive-rpc', question: 'may main.kid be typed into?', choices: null });
    assert.equal(openBox().title, 'The hub itself (hive-rpc) needs input');
  });

  test('title, ignoreFocusOut, question, countdown placeholder, decline button', () => {
    const r = prompt(w, { question: 'Which branch?', created_at: w.clock.t - 5, timeout_s: 300 });
    const box = openBox();
    assert.equal(box.title, 'Agent deployer needs input');
    assert.equal(box.ignoreFocusOut, true);
    assert.equal(box.prompt, 'Which branch?');
    assert.equal(box.placeholder, 'Start typing to cancel auto-dismiss (300s timeout)... 4m55s left');
    assert.deepEqual(box.buttons.map((b) => b.tooltip), [DECLINE_TOOLTIP]);
    assert.equal(w.flow.currentId, r.id);
    // The countdown is updated every second.
    assert.equal(w.timers.active.size, 1);
    w.clock.advance(1);
    w.timers.tick();
    assert.equal(box.placeholder, 'Start typing to cancel auto-dismiss (300s timeout)... 4m54s left');
  });

  test('no countdown when the agent gave no timeout', () => {
    prompt(w, { timeout_s: null });
    const box = openBox();
    assert.doesNotMatch(box.placeholder ?? '', /left/);
    assert.equal(w.timers.active.size, 0);
  });

  test('urgent prompts say so in the title', () => {
    prompt(w, { urgent: true, agent_id: 'builder' });
    assert.equal(openBox().title, 'Agent builder needs input (urgent)');
  });

  test('the first keystroke sends hive/typing once and stops the countdown', () => {
    const r = prompt(w);
    const box = openBox();
    box.type('m');
    box.type('a');
    box.type('i');
    assert.deepEqual(w.hub.notifications, [{ method: 'hive/typing', params: { id: r.id } }]);
    assert.doesNotMatch(box.placeholder ?? '', /left/);
    assert.equal(w.timers.active.size, 0, 'the countdown timer is stopped');
    w.clock.advance(10);
    w.timers.tick();
    assert.doesNotMatch(box.placeholder ?? '', /left/);
  });

  test('Enter answers with hive/respond {id, answer, by}', async () => {
    const r = prompt(w);
    const box = openBox();
    box.type('main');
    box.accept();
    await settle();
    assert.deepEqual(w.hub.sent('hive/respond'), [
      { method: 'hive/respond', params: { id: r.id, answer: 'main', by: 'alice' } },
    ]);
    assert.equal(box.disposed, true);
    assert.equal(w.flow.queue.size, 0);
    assert.equal(mock.open(), undefined);
    // Our own answer's dismiss says nothing.
    w.hub.emit('hive/dismiss', { id: r.id, status: 'responded', by: 'alice', action: 'accept' });
    assert.deepEqual(infos(), []);
  });

  test('an empty answer is a valid free-text answer', async () => {
    const r = prompt(w);
    openBox().accept();
    await settle();
    assert.deepEqual(w.hub.sent('hive/respond')[0].params, { id: r.id, answer: '', by: 'alice' });
  });

  test('Escape defers: the prompt stays queued, Answer Next asks it again', async () => {
    const r = prompt(w);
    openBox().escape();
    await settle();
    assert.equal(w.hub.sent('hive/respond').length, 0);
    assert.equal(w.flow.queue.size, 1);
    assert.equal(w.flow.queue.get(r.id)?.deferred, true);
    assert.equal(mock.open(), undefined, 'a deferred prompt is not asked again on its own');
    assert.match(mock.statusMessages.at(-1) ?? '', /deferred/);
    w.flow.answerNext();
    const again = openBox();
    assert.equal(again.prompt, r.question);
    again.type('x');
    again.accept();
    await settle();
    assert.deepEqual(w.hub.sent('hive/respond')[0].params, { id: r.id, answer: 'x', by: 'alice' });
  });

  test('typed then Escape sends hive/defer: the countdown shows again, typing stops it again', async () => {
    const r = prompt(w, { timeout_s: 300 });
    const box = openBox();
    box.type('ma');
    box.escape();
    await settle();
    assert.deepEqual(w.hub.notifications, [
      { method: 'hive/typing', params: { id: r.id } },
      { method: 'hive/defer', params: { id: r.id } },
    ]);
    assert.equal(w.flow.queue.get(r.id)?.typed, false);
    // The hub's hive/update: typing_at null, a new deadline.
    w.hub.emit('hive/update', { ...r, typing_at: null, deadline_at: w.clock.t + 300 });
    w.flow.answerNext();
    const again = openBox();
    assert.match(again.placeholder ?? '', /\.\.\. 5m00s left$/);
    again.type('x');
    assert.equal(w.hub.notifications.filter((n) => n.method === 'hive/typing').length, 2, 'it stops again');
  });

  test('Escape without typing ("hidden blank") sends nothing: the countdown was never stopped', async () => {
    prompt(w, { timeout_s: 300 });
    openBox().escape();
    await settle();
    assert.deepEqual(w.hub.notifications, []);
  });

  test('hive/defer from another editor shows the countdown here again', () => {
    const r = prompt(w, { timeout_s: 300 });
    w.hub.emit('hive/update', { ...r, typing_at: w.clock.t });
    assert.equal(w.flow.queue.get(r.id)?.typed, true);
    w.hub.emit('hive/update', { ...r, typing_at: null, deadline_at: w.clock.t + 300 });
    assert.equal(w.flow.queue.get(r.id)?.typed, false);
  });

  test('with hive.autoAsk off, prompts only wait until Answer Next', () => {
    mock.reset();
    const flow = new PromptFlow(w.hub, undefined, { now: w.clock.now, timers: w.timers, autoAsk: () => false });
    flow.onPrompt(record(w.clock, { question: 'Quiet?' }));
    assert.equal(mock.open(), undefined);
    assert.equal(flow.queue.size, 1);
    flow.answerNext();
    assert.equal(openBox().prompt, 'Quiet?');
    flow.dispose();
  });

  test('Answer Next with nothing waiting says so', () => {
    w.flow.answerNext();
    assert.deepEqual(infos(), ['Hive: no question is waiting']);
  });

  test('the Decline button sends action "decline" without an answer', async () => {
    const r = prompt(w);
    openBox().press('Decline');
    await settle();
    assert.deepEqual(w.hub.sent('hive/respond'), [
      { method: 'hive/respond', params: { id: r.id, action: 'decline', by: 'alice' } },
    ]);
    assert.equal(w.flow.queue.size, 0);
    assert.ok(infos().includes('Hive: declined'));
  });
});

describe('choices, Yes/No and schema prompts (quick pick)', () => {
  let w: World;
  beforeEach(() => {
    w = world();
  });

  test('choices are offered in a quick pick; picking one answers it', async () => {
    const r = prompt(w, { question: 'Where?', choices: ['staging', 'prod', 'qa'] });
    const pick = openPick();
    assert.deepEqual(pick.labels(), ['staging', 'prod', 'qa']);
    assert.equal(pick.placeholder, 'Where?');
    assert.equal(pick.ignoreFocusOut, true);
    assert.match(pick.title ?? '', /^Agent deployer needs input — 4m55s left$/);
    assert.deepEqual(pick.buttons.map((b) => b.tooltip), [DECLINE_TOOLTIP]);
    pick.type('pr');
    assert.equal(w.hub.notifications.length, 1, 'typing in the filter counts as typing');
    assert.doesNotMatch(pick.title ?? '', /left/);
    pick.pick('prod');
    pick.accept();
    await settle();
    assert.deepEqual(w.hub.sent('hive/respond')[0].params, { id: r.id, answer: 'prod', by: 'alice' });
  });

  test('agent text shows no icon and no invisible character; the answer is the exact choice', async () => {
    // `$(check)` in a choice was drawn as an icon, and invisible characters reached
    // the screen (issue 26): a soft hyphen, a tag character, a Hangul filler, an
    // interlinear annotation, the grapheme joiner, a variation selector, a ZWSP.
    const hidden = '\u00ad\u{E0041}\u3164\ufff9\u034f\ufe0f\u200b';
    const choices = ['$(check) yes', `n${hidden}o`];
    const r = prompt(w, { question: `Dep${hidden}loy?`, agent_id: `dep${hidden}loyer`, choices });
    const pick = openPick();
    const shown = [...pick.labels(), pick.placeholder ?? '', pick.title ?? ''];
    for (const text of shown) {
      assert.doesNotMatch(text, /[\p{Cf}\p{Default_Ignorable_Code_Point}]/u, JSON.stringify(text));
    }
    // Escaped as VS Code's own escapeIcons does: drawn as the text "$(check) yes".
    assert.deepEqual(pick.labels(), ['\\$(check) yes', 'no']);
    assert.equal(pick.placeholder, 'Deploy?');
    assert.match(pick.title ?? '', /^Agent deployer needs input/);
    pick.pick(pick.labels()[0]);
    pick.accept();
    await settle();
    assert.deepEqual(w.hub.sent('hive/respond')[0].params, { id: r.id, answer: '$(check) yes', by: 'alice' });
  });

  test('choices yes/no become a Yes/No pick answering the exact choice', async () => {
    const r = prompt(w, { choices: ['Yes', 'No'] });
    const pick = openPick();
    assert.deepEqual(pick.labels(), ['Yes', 'No']);
    pick.pick('No');
    pick.accept();
    await settle();
    assert.deepEqual(w.hub.sent('hive/respond')[0].params, { id: r.id, answer: 'No', by: 'alice' });
  });

  test('a schema with one boolean field is a Yes/No pick giving {field: bool}', async () => {
    const r = prompt(w, {
      schema: { type: 'object', properties: { confirm: { type: 'boolean' } }, required: ['confirm'] },
    });
    const pick = openPick();
    assert.deepEqual(pick.labels(), ['Yes', 'No']);
    pick.pick('Yes');
    pick.accept();
    await settle();
    assert.deepEqual(w.hub.sent('hive/respond')[0].params, { id: r.id, answer: { confirm: true }, by: 'alice' });
  });

  test('schema: one field after another, in order, giving an object', async () => {
    const r = prompt(w, {
      question: 'Deploy how?',
      schema: {
        type: 'object',
        properties: {
          env: { type: 'string', enum: ['staging', 'prod'], title: 'Environment' },
          replicas: { type: 'integer', minimum: 1, maximum: 10 },
          note: { type: 'string' },
          notify: { type: 'boolean' },
          ratio: { type: 'number' },
          channels: { type: 'array', items: { enum: ['chat', 'mail'] } },
        },
        required: ['env', 'replicas', 'notify', 'channels'],
      },
    });
    // 1. env: an enum, in a quick pick.
    let pick = openPick();
    assert.deepEqual(pick.labels(), ['staging', 'prod']);
    assert.match(pick.title ?? '', /Environment \(1\/6\)/);
    pick.pick('prod');
    pick.accept();
    await settle();
    // 2. replicas: an integer, checked while typing and on Enter.
    let box = openBox();
    assert.match(box.title ?? '', /replicas \(2\/6\)/);
    box.type('abc');
    assert.match(box.message(), /^replicas wants an integer — Deploy how\? \(replicas\) \(Enter answers, Escape defers\)$/);
    assert.equal(box.severity(), InputBoxValidationSeverity.Error);
    box.accept();
    await settle();
    assert.equal(mock.open(), box, 'an invalid value keeps the box open');
    box.setValue('11');
    assert.match(box.message(), /^replicas must be at most 10 — /);
    box.setValue('3');
    assert.equal(box.message(), 'Deploy how? (replicas) (Enter answers, Escape defers)');
    assert.equal(box.severity(), InputBoxValidationSeverity.Info);
    box.accept();
    await settle();
    // 3. note: an optional string, left empty, so omitted.
    box = openBox();
    assert.match(box.prompt ?? '', /note, optional/);
    box.accept();
    await settle();
    // 4. notify: a boolean, Yes/No.
    pick = openPick();
    assert.deepEqual(pick.labels(), ['Yes', 'No']);
    pick.pick('No');
    pick.accept();
    await settle();
    // 5. ratio: an optional number.
    box = openBox();
    box.type('0.5');
    box.accept();
    await settle();
    // 6. channels: a multi-select.
    pick = openPick();
    assert.equal(pick.canSelectMany, true);
    pick.pick('chat', 'mail');
    pick.accept();
    await settle();
    assert.equal(mock.open(), undefined);
    const sent = w.hub.sent('hive/respond');
    assert.equal(sent.length, 1);
    assert.deepEqual(sent[0].params, {
      id: r.id,
      answer: { env: 'prod', replicas: 3, notify: false, ratio: 0.5, channels: ['chat', 'mail'] },
      by: 'alice',
    });
    assert.deepEqual(Object.keys((sent[0].params as { answer: object }).answer), [
      'env',
      'replicas',
      'notify',
      'ratio',
      'channels',
    ]);
  });

  test('schema: Escape on a later field defers the whole prompt', async () => {
    const r = prompt(w, {
      schema: { type: 'object', properties: { a: { type: 'string' }, b: { type: 'string' } } },
    });
    openBox().accept();
    await settle();
    openBox().escape();
    await settle();
    assert.equal(w.hub.sent('hive/respond').length, 0);
    assert.equal(w.flow.queue.get(r.id)?.deferred, true);
  });

  test('a refused answer (-32004) asks again with the hub message', async () => {
    const r = prompt(w, {
      schema: { type: 'object', properties: { email: { type: 'string', format: 'email' } }, required: ['email'] },
    });
    w.hub.server = (method) => {
      if (method === 'hive/respond') {
        throw rpcError(-32004, "'email' is not a valid email address");
      }
      return null;
    };
    let box = openBox();
    box.type('not-an-email');
    box.accept();
    await settle();
    assert.equal(w.flow.queue.size, 1, 'the prompt stays pending');
    box = openBox();
    assert.equal(w.flow.currentId, r.id);
    assert.equal(box.message(), "'email' is not a valid email address — Deploy? (email) (Enter answers, Escape defers)");
    assert.equal(box.value, 'not-an-email', 'the refused value is offered again');
    assert.ok(mock.messages.some((m) => m.level === 'warning' && /answer refused/.test(m.text)));
    w.hub.server = () => ({ status: 'responded' });
    box.setValue('a@b.io');
    assert.equal(box.severity(), InputBoxValidationSeverity.Info);
    box.accept();
    await settle();
    assert.deepEqual(w.hub.sent('hive/respond')[1].params, { id: r.id, answer: { email: 'a@b.io' }, by: 'alice' });
    assert.equal(w.flow.queue.size, 0);
  });

  test('-32002 (answered elsewhere) and -32003 (closed) drop the prompt with an info message', async () => {
    for (const [code, text] of [
      [-32002, 'prompt x was already answered by bob'],
      [-32003, 'prompt x expired'],
    ] as const) {
      w = world();
      prompt(w);
      w.hub.server = () => {
        throw rpcError(code, text);
      };
      const box = openBox();
      box.type('y');
      box.accept();
      await settle();
      assert.equal(w.flow.queue.size, 0);
      assert.equal(mock.open(), undefined);
      assert.deepEqual(infos(), [`Hive: ${text}`]);
    }
  });

  test('other failures keep the prompt pending (deferred) and show an error', async () => {
    const r = prompt(w);
    w.hub.server = () => {
      throw new Error('connection closed');
    };
    openBox().accept();
    await settle();
    assert.equal(w.flow.queue.get(r.id)?.deferred, true);
    assert.ok(mock.messages.some((m) => m.level === 'error' && /connection closed/.test(m.text)));
  });
});

describe('queue and dismiss', () => {
  let w: World;
  beforeEach(() => {
    w = world();
  });

  test('one prompt at a time, "N more waiting"; after an answer the next is asked, after Escape none', async () => {
    const a = prompt(w, { question: 'A?' });
    const b = prompt(w, { question: 'B?' });
    const c = prompt(w, { question: 'C?', agent_id: 'other' });
    let box = openBox();
    assert.equal(box.prompt, 'A?');
    assert.equal(box.title, 'Agent deployer needs input · 2 more waiting');
    box.accept();
    await settle();
    box = openBox();
    assert.equal(box.prompt, 'B?');
    assert.equal(box.title, 'Agent deployer needs input · 1 more waiting');
    box.escape();
    await settle();
    // Escape is "not now": the next one does not open at once (it would take the keys that follow).
    assert.equal(mock.open(), undefined);
    // A new prompt arriving is asked again (auto-open is on in this world): the oldest not deferred.
    prompt(w, { question: 'D?' });
    box = openBox();
    assert.equal(box.prompt, 'C?');
    assert.equal(box.title, 'Agent other needs input · 2 more waiting', 'the deferred B and D wait');
    // A new prompt arriving updates the open box's count.
    prompt(w, { question: 'E?' });
    assert.equal(box.title, 'Agent other needs input · 3 more waiting');
    assert.deepEqual(
      w.hub.sent('hive/respond').map((s) => (s.params as { id: string }).id),
      [a.id],
    );
    assert.ok(w.flow.queue.has(b.id) && w.flow.queue.has(c.id));
  });

  test('hive/dismiss closes the open box, says why, and asks the next one', async () => {
    const a = prompt(w, { question: 'A?' });
    prompt(w, { question: 'B?' });
    const box = openBox();
    w.hub.emit('hive/dismiss', { id: a.id, status: 'responded', by: 'bob', action: 'accept' });
    await settle();
    assert.equal(box.disposed, true);
    assert.deepEqual(infos(), ['Hive: that question was answered by bob']);
    assert.equal(w.flow.queue.has(a.id), false);
    assert.equal(openBox().prompt, 'B?');
    assert.equal(w.hub.sent('hive/respond').length, 0);
  });

  test('hive/dismiss of a queued prompt removes it silently', async () => {
    prompt(w, { question: 'A?' });
    const b = prompt(w, { question: 'B?' });
    const box = openBox();
    assert.match(box.title ?? '', /1 more waiting/);
    w.hub.emit('hive/dismiss', { id: b.id, status: 'expired', by: null, action: null });
    await settle();
    assert.equal(box.disposed, false);
    assert.equal(box.title, 'Agent deployer needs input');
    assert.equal(w.flow.queue.size, 1);
    assert.deepEqual(infos(), []);
  });

  test('answer(id) from the view opens that prompt; cancel withdraws after confirming', async () => {
    prompt(w, { question: 'A?' });
    const b = prompt(w, { question: 'B?' });
    w.flow.answer(b.id);
    await settle();
    assert.equal(openBox().prompt, 'B?');
    assert.equal(w.flow.queue.size, 2);
    mock.messageAnswer = 'Withdraw';
    await w.flow.cancel(b.id);
    await settle();
    assert.deepEqual(w.hub.sent('hive/cancel'), [{ method: 'hive/cancel', params: { id: b.id, by: 'alice' } }]);
    assert.equal(w.flow.queue.has(b.id), false);
    assert.equal(openBox().prompt, 'A?');
  });

  test('Show Pending Prompts lists the prompts and answers the picked one', async () => {
    prompt(w, { question: 'A?' });
    openBox().escape();
    await settle();
    const b = prompt(w, { question: 'B?', agent_id: 'builder' });
    openBox().escape();
    await settle();
    let offered: { label: string; description?: string; detail?: string }[] = [];
    mock.quickPickAnswer = (items) => {
      offered = items;
      return items[1];
    };
    await w.flow.showPending();
    assert.deepEqual(
      offered.map((i) => [i.label, i.detail]),
      [
        ['deployer', 'A?'],
        ['builder', 'B?'],
      ],
    );
    assert.match(offered[0].description ?? '', /left$/);
    assert.equal(w.flow.currentId, b.id);
  });
});

describe('status bar and pending view', () => {
  test('past BURST_SIZE questions the status bar redraws once per burst', () => {
    const w = world();
    w.flow.deferAll(); // nothing opens by itself in this test
    const due: { fn: () => void; ms: number }[] = [];
    const later = (fn: () => void, ms: number): ReturnType<typeof setTimeout> => {
      due.push({ fn, ms });
      return due.length as unknown as ReturnType<typeof setTimeout>;
    };
    const bar = new HiveStatusBar(w.flow.queue, undefined, w.clock.now, later);
    const item = mock.statusBarItems[0];
    for (let i = 0; i < BURST_SIZE; i++) {
      prompt(w, { timeout_s: null });
    }
    assert.equal(item.text, `$(comment-discussion) ${BURST_SIZE}`, 'at once while short');
    for (let i = 0; i < 3 * BURST_SIZE; i++) {
      prompt(w, { timeout_s: null });
    }
    assert.equal(item.text, `$(comment-discussion) ${BURST_SIZE}`, 'not yet: the burst goes on');
    assert.deepEqual(due.map((d) => d.ms), [BURST_DELAY_MS], 'one redraw for the whole burst');
    due[0].fn();
    assert.equal(item.text, `$(comment-discussion) ${4 * BURST_SIZE}`);
    bar.dispose();
  });

  test('status bar shows $(comment-discussion) N and hides at 0', async () => {
    const w = world();
    const bar = new HiveStatusBar(w.flow.queue, undefined, w.clock.now);
    const item = mock.statusBarItems[0];
    assert.equal(item.visible, false);
    assert.equal(item.command, 'hive.showPending');
    const a = prompt(w, { timeout_s: null });
    assert.equal(item.text, '$(comment-discussion) 1');
    assert.equal(item.visible, true);
    prompt(w, { urgent: true, timeout_s: null });
    assert.equal(item.text, '$(comment-discussion) 2');
    assert.match(String(item.tooltip), /2 questions.*1 urgent/);
    w.hub.emit('hive/dismiss', { id: a.id, status: 'cancelled', by: 'x', action: null });
    await settle();
    assert.equal(item.text, '$(comment-discussion) 1');
    w.flow.reset();
    assert.equal(item.visible, false);
    bar.dispose();
  });

  test('status bar: the soonest countdown, on the warning background under 30 s; a click opens the next question', () => {
    const w = world();
    const bar = new HiveStatusBar(w.flow.queue, undefined, w.clock.now);
    const item = mock.statusBarItems[0];
    w.flow.deferAll(); // nothing opens by itself in this test
    prompt(w, { timeout_s: 300, created_at: w.clock.t });
    w.flow.deferAll();
    assert.equal(mock.open(), undefined);
    assert.equal(item.text, '$(comment-discussion) 1 · 5m00s');
    assert.equal(item.command, 'hive.answerNext');
    assert.equal(item.backgroundColor?.id, undefined);
    prompt(w, { timeout_s: 40, created_at: w.clock.t });
    w.flow.deferAll();
    assert.equal(item.text, '$(comment-discussion) 2 · 40s', 'the soonest of the two');
    w.clock.advance(11);
    bar.update(); // what its one-second timer does
    assert.equal(item.text, '$(comment-discussion) 2 · 29s');
    assert.equal(item.backgroundColor?.id, 'statusBarItem.warningBackground');
    assert.match(String(item.tooltip), /the soonest expires in 29s/);
    w.flow.reset();
    bar.dispose();
  });

  test('status bar says when the sidecar lost the hub, and recovers', () => {
    const w = world();
    const bar = new HiveStatusBar(w.flow.queue, undefined, w.clock.now);
    const item = mock.statusBarItems[0];
    prompt(w, { timeout_s: null });
    bar.setConnection(false, 'lost the hub; reconnecting');
    assert.equal(item.text, '$(debug-disconnect) 1');
    assert.match(String(item.tooltip), /lost the hub; reconnecting/);
    assert.equal(item.visible, true);
    bar.setConnection(true, '');
    assert.equal(item.text, '$(comment-discussion) 1');
    w.flow.reset();
    bar.setConnection(false, '');
    assert.equal(item.visible, true); // shown even with nothing pending
    bar.setConnection(true, '');
    assert.equal(item.visible, false);
    bar.dispose();
  });

  test("status bar warns while the hub's store is degraded, and recovers", () => {
    const w = world();
    const bar = new HiveStatusBar(w.flow.queue, undefined, w.clock.now);
    const item = mock.statusBarItems[0];
    bar.setHealth('store: database or disk is full');
    assert.equal(item.text, '$(warning) 0');
    assert.equal(item.visible, true); // shown even with nothing pending
    assert.equal(
      item.tooltip,
      "Hive: the hub's store is degraded: database or disk is full (hive-rpc doctor checks it)",
    );
    assert.equal(item.backgroundColor?.id, 'statusBarItem.warningBackground');
    prompt(w, { urgent: true, timeout_s: null });
    assert.equal(item.text, '$(warning) 1');
    assert.match(String(item.tooltip), /degraded: database or disk is full .* 1 question waiting \(1 urgent\)$/);
    // A lost hub shows as lost; the next hub's health is unknown until it says.
    bar.setConnection(false, 'lost the hub; reconnecting');
    assert.equal(item.text, '$(debug-disconnect) 1');
    bar.setConnection(true, '');
    assert.equal(item.text, '$(comment-discussion) 1');
    bar.setHealth('store: disk I/O error\nmore');
    assert.match(String(item.tooltip), /degraded: disk I\/O error more \(hive-rpc doctor/);
    bar.setHealth(null);
    assert.equal(item.text, '$(comment-discussion) 1');
    assert.equal(item.backgroundColor?.id, 'statusBarItem.warningBackground'); // urgent
    w.flow.reset();
    assert.equal(item.visible, false);
    bar.dispose();
  });

  test('a permission request says so: shield icon and count in the status bar, first word of its row', async () => {
    const w = world();
    const bar = new HiveStatusBar(w.flow.queue, undefined, w.clock.now);
    const view = new PendingTreeProvider(w.flow.queue, w.clock.now, null);
    const item = mock.statusBarItems[0];
    prompt(w, { question: 'Which branch?', timeout_s: null });
    assert.equal(item.text, '$(comment-discussion) 1');
    assert.doesNotMatch(String(item.tooltip), /permission/);
    const p = prompt(w, {
      agent_id: 'claude-code-3f2a9c1d',
      question: 'Claude Code in ~/app wants to run Bash: npm test',
      urgent: true,
      kind: 'permission',
      timeout_s: null,
    });
    assert.equal(item.text, '$(shield) 2');
    assert.match(String(item.tooltip), /2 questions from agents waiting \(1 urgent, 1 permission request\)/);
    const row = view.getTreeItem(p.id) as unknown as TreeItem;
    assert.equal(row.label, 'Permission · claude-code-3f2a9c1d: Claude Code in ~/app wants to run Bash: npm test');
    assert.equal(row.iconPath?.id, 'shield');
    assert.match(String(row.tooltip), /^claude-code-3f2a9c1d \(urgent\) asks permission:\n/);
    w.hub.emit('hive/dismiss', { id: p.id, status: 'cancelled', by: 'x', action: null });
    await settle();
    assert.equal(item.text, '$(comment-discussion) 1');
    view.dispose();
    bar.dispose();
  });

  test('tree items list agent, question and time left, with answer/cancel actions', async () => {
    const w = world();
    const view = new PendingTreeProvider(w.flow.queue, w.clock.now, null);
    let changes = 0;
    view.onDidChangeTreeData(() => changes++);
    const a = prompt(w, { question: 'Deploy\nbuild 412?', created_at: w.clock.t - 5, timeout_s: 300 });
    const b = prompt(w, { agent_id: 'builder', question: 'Which branch?', urgent: true, timeout_s: null, created_at: w.clock.t - 1 });
    assert.ok(changes >= 2);
    const children = view.getChildren();
    assert.deepEqual(children, [a.id, b.id]);
    const item = view.getTreeItem(children[0]) as unknown as TreeItem;
    assert.equal(item.label, 'deployer: Deploy build 412?');
    assert.equal(item.description, '5m left');
    assert.equal(item.contextValue, 'hivePrompt');
    assert.deepEqual(item.command, { command: 'hive.answerPrompt', title: 'Answer', arguments: [a.id] });
    const urgent = view.getTreeItem(children[1]) as unknown as TreeItem;
    assert.equal(urgent.description, 'no time limit');
    assert.equal(urgent.iconPath?.id, 'warning');
    // Inline menu commands get the element (the id), or a record.
    assert.equal(promptIdOf(children[1]), b.id);
    assert.equal(promptIdOf(b), b.id);
    assert.equal(promptIdOf(b.id), b.id);
    assert.deepEqual(view.getChildren(children[0]), []);
    view.dispose();
  });
});
