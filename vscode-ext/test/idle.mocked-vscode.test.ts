/**
 * The keyboard stays the human's: src/idle.ts (the idle tracker and the editor
 * events it reads) and how src/promptFlow.ts waits for idleness, announces a
 * prompt without focus, and writes the input box's message. The `vscode`
 * module is MOCKED (test/vscode-mock.ts) for the logic; what a real editor
 * shows is proven by tests/vscode/test_vscode_keyboard.py.
 */
import './register-vscode-mock';
import assert from 'node:assert/strict';
import { beforeEach, describe, test } from 'node:test';
import { IdleTracker, openGraceSeconds, watchEditorActivity } from '../src/idle';
import type { ActivitySources } from '../src/idle';
import { plain } from '../src/plainText';
import { PromptFlow } from '../src/promptFlow';
import { inputMessage } from '../src/promptSteps';
import { Clock, FakeHub, FakeTimers, record, settle } from './helpers';
import {
  EventEmitter,
  FakeInputBox,
  FakeQuickPick,
  InputBoxValidationSeverity,
  mock,
  window as mockWindow,
} from './vscode-mock';

/** setTimeout on a fake millisecond clock: `advance` runs what came due. */
class FakeTimeouts {
  now = 1_000_000;
  private next = 1;
  readonly pending = new Map<number, { at: number; fn: () => void }>();
  setTimeout = (fn: () => void, ms: number): unknown => {
    const h = this.next++;
    this.pending.set(h, { at: this.now + ms, fn });
    return h;
  };
  clearTimeout = (h: unknown): void => {
    this.pending.delete(h as number);
  };
  clock = (): number => this.now;
  advance(ms: number): void {
    const end = this.now + ms;
    for (;;) {
      const due = [...this.pending.entries()].filter(([, t]) => t.at <= end).sort((a, b) => a[1].at - b[1].at)[0];
      if (!due) {
        break;
      }
      this.pending.delete(due[0]);
      this.now = Math.max(this.now, due[1].at);
      due[1].fn();
    }
    this.now = end;
  }
}

describe('IdleTracker', () => {
  test('idle at first; busy for idleSeconds after activity; 0 is always idle', () => {
    const t = new FakeTimeouts();
    let seconds = 2;
    const idle = new IdleTracker(() => seconds, t.clock, t);
    assert.equal(idle.isIdle(), true);
    idle.activity();
    assert.equal(idle.isIdle(), false);
    t.advance(1999);
    assert.equal(idle.isIdle(), false);
    t.advance(1);
    assert.equal(idle.isIdle(), true);
    idle.activity();
    seconds = 0;
    assert.equal(idle.isIdle(), true);
  });

  test('whenIdle runs at once when idle, else once the activity stops, with one timer', () => {
    const t = new FakeTimeouts();
    const idle = new IdleTracker(() => 2, t.clock, t);
    let ran = 0;
    idle.whenIdle(() => ran++);
    assert.equal(ran, 1, 'idle now: at once');
    idle.activity();
    idle.whenIdle(() => ran++);
    assert.equal(ran, 1);
    assert.equal(t.pending.size, 1);
    // Typing goes on: every key is activity; the waiter keeps waiting.
    for (let i = 0; i < 30; i++) {
      t.advance(150);
      idle.activity();
    }
    assert.equal(ran, 1);
    assert.ok(t.pending.size <= 1, 'never more than one timer');
    t.advance(1999);
    assert.equal(ran, 1);
    t.advance(1);
    assert.equal(ran, 2, 'two seconds after the last key');
    assert.equal(t.pending.size, 0);
  });

  test('a disposed waiter does not run; recheck applies a new idle time', () => {
    const t = new FakeTimeouts();
    let seconds = 10;
    const idle = new IdleTracker(() => seconds, t.clock, t);
    idle.activity();
    let ran = 0;
    const w = idle.whenIdle(() => ran++);
    w.dispose();
    assert.equal(t.pending.size, 0);
    t.advance(20_000);
    assert.equal(ran, 0);
    idle.activity();
    idle.whenIdle(() => ran++);
    seconds = 0;
    idle.recheck();
    assert.equal(ran, 1);
  });
});

describe('watchEditorActivity', () => {
  function sources() {
    const doc = { uri: { scheme: 'file' } };
    const log = { uri: { scheme: 'output' } };
    const hidden = { uri: { scheme: 'file' } };
    const change = new EventEmitter<unknown>();
    const selection = new EventEmitter<unknown>();
    const active = new EventEmitter<unknown>();
    const s = {
      window: {
        onDidChangeTextEditorSelection: selection.event,
        onDidChangeActiveTextEditor: active.event,
        visibleTextEditors: [{ document: doc }, { document: log }],
      },
      workspace: { onDidChangeTextDocument: change.event },
    };
    return { s: s as unknown as ActivitySources, doc, log, hidden, change, selection, active };
  }

  test('typing in a visible editor, moving the cursor or switching editors is activity', () => {
    const t = new FakeTimeouts();
    const idle = new IdleTracker(() => 2, t.clock, t);
    const { s, doc, log, hidden, change, selection, active } = sources();
    const watch = watchEditorActivity(idle, s);
    const busyAfter = (fire: () => void): boolean => {
      t.advance(5000);
      assert.equal(idle.isIdle(), true);
      fire();
      return !idle.isIdle();
    };
    assert.equal(busyAfter(() => change.fire({ document: doc, contentChanges: [{ text: 'a' }] })), true);
    assert.equal(busyAfter(() => selection.fire({ textEditor: { document: doc } })), true);
    assert.equal(busyAfter(() => active.fire(undefined)), true);
    // Not activity: our own output channel, a file changed in the background,
    // a change without content (dirty state).
    assert.equal(busyAfter(() => change.fire({ document: log, contentChanges: [{ text: 'log line' }] })), false);
    assert.equal(busyAfter(() => selection.fire({ textEditor: { document: log } })), false);
    assert.equal(busyAfter(() => change.fire({ document: hidden, contentChanges: [{ text: 'x' }] })), false);
    assert.equal(busyAfter(() => change.fire({ document: doc, contentChanges: [] })), false);
    watch.dispose();
    assert.equal(busyAfter(() => change.fire({ document: doc, contentChanges: [{ text: 'a' }] })), false);
  });
});

describe('PromptFlow waits for the human to be idle', () => {
  let hub: FakeHub;
  let clock: Clock;
  let t: FakeTimeouts;
  let idle: IdleTracker;
  let flow: PromptFlow;
  beforeEach(() => {
    mock.reset();
    hub = new FakeHub();
    clock = new Clock();
    t = new FakeTimeouts();
    idle = new IdleTracker(() => 2, t.clock, t);
    flow = new PromptFlow(hub, undefined, { by: () => 'alice', now: clock.now, timers: new FakeTimers(), idle });
  });

  test('a prompt that arrives while the human types is announced, and opens once they stop', async () => {
    idle.activity();
    const r = record(clock, { agent_id: 'deployer', question: 'Which branch?' });
    hub.emit('hive/prompt', r);
    assert.equal(mock.open(), undefined, 'no box while typing');
    await settle();
    // Announced in one notification that takes no focus, with its links.
    assert.equal(mock.openProgress().length, 1);
    assert.match(mock.openProgress()[0].messages[0], /^deployer asks: Which branch\? — \[Answer…\]\(command:hive\.answerPrompt\?/);
    assert.equal(flow.queue.size, 1);
    t.advance(1500);
    idle.activity();
    t.advance(1999);
    assert.equal(mock.open(), undefined);
    t.advance(1);
    const box = mock.open();
    assert.ok(box instanceof FakeInputBox);
    assert.equal(box.prompt, 'Which branch?');
    assert.deepEqual(hub.notifications, [], 'nothing was typed into it');
    await settle();
    assert.deepEqual(mock.openProgress(), [], 'the box is open: its notification went away');
    flow.dispose();
  });

  test('Answer Next does not wait', () => {
    idle.activity();
    hub.emit('hive/prompt', record(clock, { question: 'Now?' }));
    assert.equal(mock.open(), undefined);
    flow.answerNext();
    assert.equal((mock.open() as FakeInputBox).prompt, 'Now?');
    flow.dispose();
  });

  test("the notification's Answer link opens it at once", async () => {
    idle.activity();
    const r = record(clock, { question: 'Clicked?', urgent: true });
    hub.emit('hive/prompt', r);
    await settle();
    const link = encodeURIComponent(JSON.stringify([r.id]));
    assert.ok(mock.openProgress()[0].messages[0].includes(`(command:hive.answerPrompt?${link})`));
    flow.answer(r.id); // what the link runs
    await settle();
    assert.equal((mock.open() as FakeInputBox).prompt, 'Clicked?');
    flow.dispose();
  });

  test('idle: opens at once, and no notification stays', async () => {
    hub.emit('hive/prompt', record(clock, { question: 'Idle?' }));
    assert.equal((mock.open() as FakeInputBox).prompt, 'Idle?');
    await settle();
    assert.deepEqual(mock.openProgress(), []);
    flow.dispose();
  });

  test('the next prompt after an answer also waits for idleness', async () => {
    hub.emit('hive/prompt', record(clock, { question: 'A?' }));
    hub.emit('hive/prompt', record(clock, { question: 'B?' }));
    const a = mock.open() as FakeInputBox;
    assert.equal(a.prompt, 'A?');
    idle.activity(); // the human clicked into an editor and typed
    a.setValue('yes');
    a.accept();
    await settle();
    assert.equal(mock.open(), undefined);
    t.advance(2000);
    assert.equal((mock.open() as FakeInputBox).prompt, 'B?');
    flow.dispose();
  });

  test('a prompt dismissed while waiting does not open', async () => {
    idle.activity();
    const r = record(clock);
    hub.emit('hive/prompt', r);
    await settle();
    assert.equal(mock.openProgress().length, 1);
    hub.emit('hive/dismiss', { id: r.id, status: 'responded', by: 'bob', action: 'accept' });
    t.advance(5000);
    assert.equal(mock.open(), undefined);
    await settle();
    assert.deepEqual(mock.openProgress(), [], 'answered elsewhere: its notification went away');
    flow.dispose();
  });
});

/** A text editor whose edits are recorded (what the opening moment gives back). */
function fakeEditor() {
  const inserted: string[] = [];
  const editor = {
    document: { isClosed: false, uri: { scheme: 'file' } },
    selections: [{ anchor: 0 }],
    edit(build: (b: { replace(sel: unknown, text: string): void }) => void): Promise<boolean> {
      build({ replace: (_sel, text) => inserted.push(text) });
      return Promise.resolve(true);
    },
  };
  return { editor, inserted };
}

describe('the opening moment (hive.openGraceSeconds)', () => {
  let hub: FakeHub;
  let clock: Clock;
  let t: FakeTimeouts;
  let idle: IdleTracker;
  let flow: PromptFlow;
  beforeEach(() => {
    mock.reset();
    hub = new FakeHub();
    clock = new Clock();
    t = new FakeTimeouts();
    idle = new IdleTracker(() => 2, t.clock, t);
    flow = new PromptFlow(hub, undefined, {
      by: () => 'alice',
      now: clock.now,
      timers: new FakeTimers(),
      idle,
      openGrace: () => 1,
    });
  });

  test('a key just after it opened by itself goes back to the editor; it reopens at the next pause', async () => {
    const { editor, inserted } = fakeEditor();
    mockWindow.activeTextEditor = editor;
    const r = record(clock, { question: 'Which branch?' });
    hub.emit('hive/prompt', r);
    const box = mock.open() as FakeInputBox;
    box.type('b');
    box.type('r');
    await settle();
    assert.deepEqual(inserted.join(''), 'br', 'the keys went to the editor, in order');
    assert.equal(mock.open(), undefined, 'the box closed');
    assert.deepEqual(hub.notifications, [], 'no hive/typing: nothing was typed into the question');
    // No answer; it waits, announced (a notification showing it: hive/shown).
    assert.deepEqual(hub.sent('hive/respond'), []);
    assert.equal(flow.queue.get(r.id)?.deferred, false, 'not deferred');
    assert.match(mock.statusMessages[0], /your keys went to your editor/);
    // The human goes on typing in the editor; at the next pause it opens again.
    t.advance(1999);
    assert.equal(mock.open(), undefined);
    t.advance(1);
    const again = mock.open() as FakeInputBox;
    assert.equal(again.prompt, 'Which branch?');
    // After the opening moment, keys are an answer.
    clock.advance(1);
    again.type('main');
    again.accept();
    await settle();
    assert.deepEqual(hub.sent('hive/respond')[0].params, { id: r.id, answer: 'main', by: 'alice' });
    flow.dispose();
  });

  test('Enter in the opening moment is a line break in the editor, not an (empty) answer', async () => {
    const { editor, inserted } = fakeEditor();
    mockWindow.activeTextEditor = editor;
    hub.emit('hive/prompt', record(clock, { question: 'Deploy?', choices: ['yes', 'no'] }));
    const pick = mock.open() as FakeQuickPick;
    pick.accept();
    await settle();
    assert.deepEqual(inserted, ['\n']);
    assert.equal(mock.open(), undefined);
    assert.deepEqual(hub.sent('hive/respond'), []);
    flow.dispose();
  });

  test('the next question, opening as the human answers one, takes keys at once', async () => {
    hub.emit('hive/prompt', record(clock, { question: 'A?' }));
    const b = record(clock, { question: 'B?' });
    hub.emit('hive/prompt', b);
    clock.advance(5); // past A's opening moment
    const first = mock.open() as FakeInputBox;
    first.type('a');
    first.accept();
    await settle();
    const second = mock.open() as FakeInputBox;
    assert.equal(second.prompt, 'B?');
    second.type('b');
    second.accept();
    await settle();
    assert.deepEqual(hub.sent('hive/respond')[1].params, { id: b.id, answer: 'b', by: 'alice' });
    flow.dispose();
  });

  test('a question asked for (Answer Next) takes keys at once', async () => {
    idle.activity();
    const r = record(clock, { question: 'Now?' });
    hub.emit('hive/prompt', r);
    flow.answerNext();
    const box = mock.open() as FakeInputBox;
    box.type('yes');
    box.accept();
    await settle();
    assert.deepEqual(hub.sent('hive/respond')[0].params, { id: r.id, answer: 'yes', by: 'alice' });
    flow.dispose();
  });

  test('off when hive.idleSeconds is 0; the setting otherwise, default 1', () => {
    assert.equal(openGraceSeconds(0, 5), 0);
    assert.equal(openGraceSeconds(2, undefined), 1);
    assert.equal(openGraceSeconds(2, 0), 0);
    assert.equal(openGraceSeconds(2, 3), 3);
    assert.equal(openGraceSeconds(2, -1), 1);
  });
});

describe("the input box's message", () => {
  test('says Enter answers and Escape defers, after the question; a problem goes first', () => {
    assert.deepEqual(inputMessage('Which branch?'), {
      message: 'Which branch? (Enter answers, Escape defers)',
      severity: InputBoxValidationSeverity.Info,
    });
    assert.deepEqual(inputMessage('Which branch?', 'too long'), {
      message: 'too long — Which branch? (Enter answers, Escape defers)',
      severity: InputBoxValidationSeverity.Error,
    });
  });

  test('an open box never shows VS Code\'s "Escape to cancel"', () => {
    mock.reset();
    const hub = new FakeHub();
    const flow = new PromptFlow(hub, undefined, { now: new Clock().now, timers: new FakeTimers() });
    hub.emit('hive/prompt', record(new Clock(), { question: 'Name?' }));
    const box = mock.open() as FakeInputBox;
    assert.equal(box.message(), 'Name? (Enter answers, Escape defers)');
    box.type('x');
    assert.equal(box.message(), 'Name? (Enter answers, Escape defers)');
    assert.doesNotMatch(box.message(), /cancel/);
    flow.dispose();
  });

  test('nor can a name in a notification (who answered, in the dismiss message)', () => {
    mock.reset();
    const hub = new FakeHub();
    const flow = new PromptFlow(hub, undefined, { now: new Clock().now, timers: new FakeTimers() });
    const r = record(new Clock());
    hub.emit('hive/prompt', r);
    hub.emit('hive/dismiss', { id: r.id, status: 'responded', by: '[ok](command:evil)', action: 'accept' });
    assert.equal(mock.messages.length, 1);
    assert.doesNotMatch(mock.messages[0].text, /\]\(/);
    assert.match(mock.messages[0].text, /answered by \[ok\]\u200b\(command:evil\)/);
    flow.dispose();
  });

  test('agent text cannot become an icon or a command link', () => {
    const text = plain('run $(terminal) [here](command:workbench.action.terminal.sendSequence?x)');
    assert.doesNotMatch(text, /\$\(/);
    assert.doesNotMatch(text, /\]\(/);
    assert.equal(text.replace(/\u200b/g, ''), 'run $(terminal) [here](command:workbench.action.terminal.sendSequence?x)');
  });
});
