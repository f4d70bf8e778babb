/**
 * The agent sessions' model (src/sessions.ts) without `vscode`: the list's
 * order, the words of a row, the feed's notifications (changes, removals, the
 * replay of a new subscription replacing the list, and no request, no timer);
 * and src/processTree.ts on real processes.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, test } from 'node:test';
import { isAncestor, parentFromStat, procParent, terminalOf } from '../src/processTree';
import {
  compareSessions,
  formatAge,
  SessionFeed,
  sessionDescription,
  sessionLabel,
  SessionStore,
  sessionTooltip,
  sessionWhat,
  tildePath,
} from '../src/sessions';
import { FakeHub, session, T0 } from './helpers';

const HOME = '/home/me';

describe('the list of sessions', () => {
  test('waiting first (longest waiting first), then working, idle, gone (latest change first)', () => {
    const rows = [
      session({ agent_id: 'gone-1', state: 'gone', changed_at: T0 - 5 }),
      session({ agent_id: 'idle-old', state: 'idle', changed_at: T0 - 500 }),
      session({ agent_id: 'wait-new', state: 'waiting', questions: 1, changed_at: T0 - 10 }),
      session({ agent_id: 'work', state: 'working', changed_at: T0 - 30 }),
      session({ agent_id: 'idle-new', state: 'idle', changed_at: T0 - 20 }),
      session({ agent_id: 'wait-old', state: 'waiting', permissions: 1, changed_at: T0 - 900 }),
    ];
    assert.deepEqual(
      rows.sort(compareSessions).map((r) => r.agent_id),
      ['wait-old', 'wait-new', 'work', 'idle-new', 'idle-old', 'gone-1'],
    );
  });

  test('the store: set replaces, a state change redraws the list, remove takes off, waiting is counted', () => {
    const store = new SessionStore();
    const events: (readonly string[] | undefined)[] = [];
    store.onDidChange((ids) => events.push(ids));
    store.set(session({ agent_id: 'a', state: 'working', changed_at: T0 - 5 }));
    store.set(session({ agent_id: 'b', state: 'idle' }));
    assert.deepEqual(events, [undefined, undefined], 'new rows: the whole list');
    assert.equal(store.waitingCount(), 0);

    events.length = 0;
    const b = store.get('b')!;
    store.set({ ...b, message: 'a notice' }); // same state and time: that row only
    assert.deepEqual(events, [['b']]);

    events.length = 0;
    store.set({ ...b, state: 'waiting', permissions: 2, changed_at: T0 });
    assert.deepEqual(events, [undefined], 'a state change moves the row');
    assert.deepEqual(store.records().map((r) => r.agent_id), ['b', 'a']);
    assert.equal(store.waitingCount(), 1);

    events.length = 0;
    store.remove('a');
    store.remove('a');
    assert.deepEqual(events, [undefined], 'removing twice tells once');
    assert.deepEqual(store.records().map((r) => r.agent_id), ['b']);
    store.clear();
    assert.deepEqual(store.records(), []);
  });
});

describe("a row's words", () => {
  test('the label: kind and process, after the ling; an agent with a name of its own is that name', () => {
    assert.equal(sessionLabel(session({ agent_id: 'claude-code-4242', pid: 4242 })), 'Claude Code 4242');
    assert.equal(sessionLabel(session({ agent_id: 'claude-code-77', pid: null })), 'Claude Code 77');
    assert.equal(sessionLabel(session({ agent_id: 'claude-code-4242', pid: 4242, ling: 'reviewer' })), 'reviewer · Claude Code 4242');
    assert.equal(sessionLabel(session({ agent_id: 'deployer', agent: null, display: null })), 'deployer');
  });

  test('the description: what it waits on or its state · project · time since its change', () => {
    const waiting = session({ agent_id: 'a', state: 'waiting', permissions: 2, project_dir: `${HOME}/src/app`, changed_at: T0 - 185 });
    assert.equal(sessionDescription(waiting, T0, HOME), '2 permissions · ~/src/app · 3m');
    assert.equal(sessionWhat({ ...waiting, permissions: 1, questions: 2 }), '1 permission, 2 questions');
    assert.equal(sessionWhat({ ...waiting, permissions: 0, in_terminal: true }), 'waits in its terminal');
    assert.equal(
      sessionDescription(session({ agent_id: 'b', state: 'working', project_dir: '/srv/x', changed_at: T0 - 10 }), T0, HOME),
      'working · /srv/x · <1m',
    );
    assert.equal(sessionDescription(session({ agent_id: 'c', state: 'gone', changed_at: T0 - 7500 }), T0, HOME), 'gone · 2h05m');
    assert.equal(formatAge(90_000), '1d01h');
    assert.equal(tildePath(HOME, HOME), '~');
    assert.equal(tildePath('/home/meow/x', HOME), '/home/meow/x');
  });

  test('the tooltip: the facts, one a line, and what a click does', () => {
    const r = session({
      agent_id: 'claude-code-4242',
      pid: 4242,
      state: 'waiting',
      permissions: 1,
      prompt_ids: ['p1'],
      project_dir: `${HOME}/src/app`,
      terminal: 'tmux:%3@/tmp/tmux-1000/default',
      last_event: 'ask',
      message: 'Claude needs your permission',
      changed_at: T0 - 120,
    });
    assert.equal(
      sessionTooltip(r, T0, HOME),
      [
        'Claude Code 4242 (claude-code-4242): 1 permission',
        'Click to answer its oldest prompt.',
        'Project: ~/src/app',
        'Runs as pid 4242, terminal tmux:%3@/tmp/tmux-1000/default',
        'Last: it asked, 2m ago',
        'Message: Claude needs your permission',
        'Started 1h00m ago',
      ].join('\n'),
    );
    const idle = sessionTooltip({ ...r, state: 'idle', permissions: 0, prompt_ids: [], message: null }, T0, HOME);
    assert.match(idle, /^Claude Code 4242 \(claude-code-4242\): idle\nClick to show its terminal\./);
  });
});

describe('the feed', () => {
  test('by push only: the replay fills the list, each change and removal follows, and nothing is asked or timed', () => {
    const hub = new FakeHub();
    const store = new SessionStore();
    const feed = new SessionFeed(hub, store);
    // The subscription's replay: one hive/session for each session.
    hub.emit('hive/session', session({ agent_id: 'a', state: 'working' }));
    hub.emit('hive/session', session({ agent_id: 'b', state: 'idle' }));
    assert.deepEqual(store.records().map((r) => r.agent_id), ['a', 'b']);
    // Then the changes as they happen; a prompt's own notifications change nothing here.
    hub.emit('hive/prompt', { id: 'p1' });
    hub.emit('hive/session', session({ agent_id: 'b', state: 'waiting', questions: 1, prompt_ids: ['p1'], changed_at: T0 + 1 }));
    assert.deepEqual(store.records().map((r) => [r.agent_id, r.state]), [
      ['b', 'waiting'],
      ['a', 'working'],
    ]);
    hub.emit('hive/sessionRemoved', { agent_id: 'a' });
    assert.deepEqual(store.records().map((r) => r.agent_id), ['b']);
    // Malformed notifications are ignored.
    hub.emit('hive/session', null);
    hub.emit('hive/sessionRemoved', {});
    assert.equal(store.size, 1);
    // A prompt's change moves nothing here: the feed asks the hub nothing.
    hub.emit('hive/dismiss', { id: 'p1' });
    assert.deepEqual(hub.requests, []);
    feed.dispose();
    hub.emit('hive/session', session({ agent_id: 'c' }));
    assert.equal(store.get('c'), undefined, 'disposed: no longer follows');
  });

  test("a reconnection: the new subscription's replay replaces the list, so a session removed meanwhile goes", () => {
    const hub = new FakeHub();
    const store = new SessionStore();
    const lines: string[] = [];
    const feed = new SessionFeed(hub, store, (l) => lines.push(l));
    hub.emit('hive/session', session({ agent_id: 'left-meanwhile', state: 'waiting', questions: 1 }));
    hub.emit('hive/session', session({ agent_id: 'still-there', state: 'working' }));
    // The hub is lost: the last list stays shown until a hub is found again.
    hub.emit('hive/connection', { connected: false, message: 'lost the hub; reconnecting' });
    assert.equal(store.size, 2);
    // Found again: the sidecar says so before the new subscription's replay, which
    // has no word of the session that left meanwhile.
    hub.emit('hive/connection', { connected: true, message: '' });
    assert.equal(store.size, 0);
    hub.emit('hive/session', session({ agent_id: 'still-there', state: 'idle' }));
    hub.emit('hive/session', session({ agent_id: 'new', state: 'working' }));
    assert.deepEqual(store.records().map((r) => [r.agent_id, r.state]), [
      ['new', 'working'],
      ['still-there', 'idle'],
    ]);
    assert.deepEqual(lines, ['subscribed to the hub again: the Sessions view takes its list anew']);
    // A new sidecar: forgotten, its subscription replays the list.
    feed.reset();
    assert.equal(store.size, 0);
    assert.deepEqual(hub.requests, []);
    feed.dispose();
  });
});

describe('which terminal runs an agent (/proc)', () => {
  test('parentFromStat reads past a command name with spaces and parentheses', () => {
    assert.equal(parentFromStat('4242 (we (ird) name) S 17 4242 4242 0 -1'), 17);
    assert.equal(parentFromStat('garbage'), undefined);
  });

  test('a fake tree: ancestors found, strangers not, a loop ends', () => {
    const parents = new Map([
      [40, 30],
      [30, 20],
      [20, 1],
      [50, 1],
      [60, 61],
      [61, 60],
    ]);
    const parentOf = (pid: number) => parents.get(pid);
    assert.equal(isAncestor(20, 40, parentOf), true);
    assert.equal(isAncestor(40, 40, parentOf), true);
    assert.equal(isAncestor(50, 40, parentOf), false);
    assert.equal(isAncestor(99, 60, parentOf), false);
    assert.equal(
      terminalOf(40, [{ terminal: 'other', pid: 50 }, { terminal: 'unknown', pid: undefined }, { terminal: 'mine', pid: 30 }], parentOf),
      'mine',
    );
  });

  test('real processes: a shell is the ancestor of its grandchild, not of a sibling', async () => {
    // bash starts a sleep under a subshell and prints the sleep's pid.
    const shell = spawn('/bin/bash', ['-c', '( sleep 30 & echo $!; wait ) ; true'], { stdio: ['ignore', 'pipe', 'inherit'] });
    const sibling = spawn('/bin/sleep', ['30']);
    let grandchild = 0;
    try {
      const [chunk] = (await once(shell.stdout, 'data')) as [Buffer];
      grandchild = Number(chunk.toString().trim());
      assert.ok(grandchild > 0);
      assert.equal(procParent(process.pid), process.ppid);
      assert.equal(isAncestor(shell.pid!, grandchild), true);
      assert.equal(isAncestor(sibling.pid!, grandchild), false);
      assert.equal(isAncestor(process.pid, grandchild), true, 'this test process is an ancestor too');
    } finally {
      if (grandchild > 0) {
        process.kill(grandchild, 'SIGKILL');
      }
      shell.kill('SIGKILL');
      sibling.kill('SIGKILL');
    }
  });
});
