/**
 * The pending view's refreshes, `hive/update` and deferred prompts across a
 * sidecar restart, with a MOCKED `vscode` module (test/vscode-mock.ts) for the
 * logic: which rows a change refreshes, when the countdown timer runs. That the
 * real VS Code keeps the clicks is tested in the real editor
 * (tests/vscode/test_vscode_view.py).
 */
import './register-vscode-mock';
import assert from 'node:assert/strict';
import { beforeEach, describe, test } from 'node:test';
import { PendingTreeProvider } from '../src/pendingView';
import { PromptFlow } from '../src/promptFlow';
import type { PromptRecord } from '../src/protocol';
import { PromptQueue } from '../src/queue';
import { Clock, FakeHub, FakeTimers, record } from './helpers';
import { FakeInputBox, mock, TreeItem } from './vscode-mock';

/** What onDidChangeTreeData fired: 'all' for the whole tree, else the ids. */
type Fired = 'all' | string[];

function watch(view: PendingTreeProvider): Fired[] {
  const fired: Fired[] = [];
  view.onDidChangeTreeData((e) => fired.push(e === undefined ? 'all' : Array.isArray(e) ? [...e] : [e as string]));
  return fired;
}

/** Render every row, as VS Code does after a refresh. */
function render(view: PendingTreeProvider): Map<string, TreeItem> {
  return new Map(view.getChildren().map((id) => [id, view.getTreeItem(id) as unknown as TreeItem]));
}

describe('PromptQueue change events', () => {
  test('membership changes say nothing; a record, deferral or typing names the prompt', () => {
    const clock = new Clock();
    const q = new PromptQueue();
    const events: (readonly string[] | undefined)[] = [];
    q.onDidChange((ids) => events.push(ids));
    const r = record(clock);
    q.add(r);
    q.add({ ...r, question: 'resent' });
    q.defer(r.id);
    q.undefer(r.id);
    q.markTyped(r.id);
    assert.equal(q.update({ ...r, typing_at: clock.t }), true);
    assert.equal(q.update(record(clock)), false, 'an unknown prompt is no new question');
    assert.equal(q.size, 1);
    q.remove(r.id);
    assert.deepEqual(events, [undefined, [r.id], [r.id], [r.id], [r.id], [r.id], undefined]);
  });

  test('hive/update takes the new record and marks it typed', () => {
    const clock = new Clock();
    const q = new PromptQueue();
    const r = record(clock, { timeout_s: 300 });
    q.add(r);
    assert.equal(q.get(r.id)?.typed, false);
    q.update({ ...r, typing_at: clock.t, deadline_at: r.max_deadline_at });
    assert.equal(q.get(r.id)?.typed, true);
    assert.equal(q.get(r.id)?.record.deadline_at, r.max_deadline_at);
    assert.equal(q.update({ ...r, status: 'responded' }), false);
  });

  test('a prompt deferred before clear() comes back deferred; others do not', () => {
    const clock = new Clock();
    const q = new PromptQueue();
    const a = record(clock);
    const b = record(clock);
    q.add(a);
    q.add(b);
    q.defer(a.id);
    q.clear();
    assert.equal(q.size, 0);
    q.add(b);
    q.add(a);
    assert.equal(q.get(a.id)?.deferred, true);
    assert.equal(q.get(b.id)?.deferred, false);
    assert.equal(q.next()?.record.id, b.id);
    // Once removed (answered, dismissed), it is forgotten.
    q.remove(a.id);
    q.clear();
    q.add(a);
    assert.equal(q.get(a.id)?.deferred, false);
  });
});

describe('Hive: Pending view refreshes', () => {
  let clock: Clock;
  let timers: FakeTimers;
  let queue: PromptQueue;
  let view: PendingTreeProvider;
  let fired: Fired[];

  beforeEach(() => {
    mock.reset();
    clock = new Clock();
    timers = new FakeTimers();
    queue = new PromptQueue();
    view = new PendingTreeProvider(queue, clock.now, timers);
    fired = watch(view);
  });

  test('the countdown, to the minute, refreshes only the rows whose text changed, never the whole tree', () => {
    const counting = record(clock, { created_at: clock.t, timeout_s: 300 });
    const free = record(clock, { created_at: clock.t, timeout_s: null });
    const hours = record(clock, { created_at: clock.t, timeout_s: 7200 });
    for (const r of [counting, free, hours]) {
      queue.add(r);
    }
    assert.deepEqual(fired, ['all', 'all', 'all']);
    let rows = render(view);
    assert.equal(rows.get(counting.id)?.description, '5m left');
    assert.equal(rows.get(free.id)?.description, 'no time limit');
    assert.equal(rows.get(hours.id)?.description, '2h00m left');
    assert.equal(timers.active.size, 1);
    fired.length = 0;
    // Seconds pass: no row's text changes, nothing is redrawn.
    for (let i = 0; i < 59; i++) {
      clock.advance(1);
      timers.tick();
    }
    assert.deepEqual(fired, [], 'no redraw while the minute stays the same');
    clock.advance(1);
    timers.tick();
    // A minute is gone: both counting rows, once, not the free one.
    assert.deepEqual(fired, [[counting.id, hours.id]]);
    rows = render(view);
    assert.equal(rows.get(counting.id)?.description, '4m left');
    assert.equal(rows.get(hours.id)?.description, '1h59m left');
    fired.length = 0;
    clock.advance(1);
    timers.tick();
    assert.deepEqual(fired, []);
    clock.advance(240 - 1 - 1);
    timers.tick();
    rows = render(view);
    assert.equal(rows.get(counting.id)?.description, '<1m left');
  });

  test('no timer without a countdown; it stops when typing stops the last one', () => {
    const free = record(clock, { timeout_s: null });
    queue.add(free);
    assert.equal(view.ticking, false);
    const r = record(clock, { created_at: clock.t, timeout_s: 60 });
    queue.add(r);
    assert.equal(view.ticking, true);
    render(view);
    fired.length = 0;
    // Typed into elsewhere: hive/update refreshes that row only, and the timer stops.
    queue.update({ ...r, typing_at: clock.t, deadline_at: r.max_deadline_at });
    assert.deepEqual(fired, [[r.id]]);
    assert.equal((view.getTreeItem(r.id) as unknown as TreeItem).description, 'typing: countdown stopped');
    assert.equal(view.ticking, false);
    queue.remove(r.id);
    queue.remove(free.id);
    assert.equal(view.ticking, false);
  });

  test('the elements are ids: a record update keeps the element the same', () => {
    const r = record(clock);
    queue.add(r);
    const [before] = view.getChildren();
    queue.update({ ...r, typing_at: clock.t });
    const [after] = view.getChildren();
    assert.equal(typeof before, 'string');
    assert.equal(before, after);
    // A row asked for after its prompt closed does not throw.
    queue.remove(r.id);
    assert.equal((view.getTreeItem(r.id) as unknown as TreeItem).label, '(no longer pending)');
    view.dispose();
    assert.equal(timers.active.size, 0);
  });
});

describe('hive/update through the prompt flow', () => {
  test('typing in another editor stops the open box countdown, the view row and Show Pending', async () => {
    mock.reset();
    const hub = new FakeHub();
    const clock = new Clock();
    const timers = new FakeTimers();
    const flow = new PromptFlow(hub, undefined, { by: () => 'alice', now: clock.now, timers });
    const view = new PendingTreeProvider(flow.queue, clock.now, timers);
    const r: PromptRecord = record(clock, { created_at: clock.t, timeout_s: 300 });
    hub.emit('hive/prompt', r);
    const box = mock.open();
    assert.ok(box instanceof FakeInputBox);
    assert.match(box.placeholder ?? box.prompt ?? '', /5m00s left/);
    assert.equal((view.getTreeItem(r.id) as unknown as TreeItem).description, '5m left');
    hub.emit('hive/update', { ...r, typing_at: clock.t + 1, deadline_at: r.max_deadline_at });
    assert.doesNotMatch(`${box.placeholder} ${box.prompt} ${box.title}`, /left/);
    assert.equal((view.getTreeItem(r.id) as unknown as TreeItem).description, 'typing: countdown stopped');
    assert.deepEqual(hub.notifications, [], 'this window did not type: it sends no hive/typing');
    // Typing here after that sends nothing either: the hub knows.
    box.type('x');
    assert.deepEqual(hub.notifications, []);
    let offered: { description?: string }[] = [];
    mock.quickPickAnswer = (items) => {
      offered = items;
      return undefined;
    };
    box.hide(); // Escape: deferred, so Show Pending's quick pick is the only one open.
    await flow.showPending();
    assert.deepEqual(
      offered.map((i) => i.description),
      ['typing: countdown stopped'],
    );
    assert.equal(flow.queue.size, 1);
    view.dispose();
    flow.dispose();
  });
});
