/**
 * The Hive: Sessions view (src/sessionsView.ts) with a MOCKED `vscode` module:
 * its rows (order, label, description, icon, tooltip, click), which rows a
 * change redraws, the badge, and what a click opens. That a real VS Code shows
 * it, and a click there opens the question, is tested in the real editor
 * (tests/vscode/test_vscode_sessions.py).
 */
import './register-vscode-mock';
import assert from 'node:assert/strict';
import { beforeEach, describe, test } from 'node:test';
import { PromptQueue } from '../src/queue';
import { SessionStore } from '../src/sessions';
import { openSession, SessionsTreeProvider } from '../src/sessionsView';
import { Clock, FakeTimers, record, session, T0 } from './helpers';
import { mock, TreeItem, window } from './vscode-mock';

const HOME = '/home/me';

function render(view: SessionsTreeProvider): TreeItem[] {
  return view.getChildren().map((id) => view.getTreeItem(id) as unknown as TreeItem);
}

function watch(view: SessionsTreeProvider): ('all' | string[])[] {
  const fired: ('all' | string[])[] = [];
  view.onDidChangeTreeData((e) => fired.push(e === undefined ? 'all' : Array.isArray(e) ? [...e] : [e as string]));
  return fired;
}

describe('the Sessions view', () => {
  beforeEach(() => mock.reset());

  test('rows: waiting first, an icon per state, the description and a click that opens the session', () => {
    const store = new SessionStore();
    const clock = new Clock(T0);
    const view = new SessionsTreeProvider(store, clock.now, null, HOME);
    store.set(session({ agent_id: 'claude-code-11', pid: 11, state: 'working', project_dir: `${HOME}/src/api`, changed_at: T0 - 30 }));
    store.set(
      session({
        agent_id: 'claude-code-22',
        pid: 22,
        state: 'waiting',
        permissions: 2,
        prompt_ids: ['p1', 'p2'],
        project_dir: `${HOME}/src/app`,
        changed_at: T0 - 185,
      }),
    );
    store.set(session({ agent_id: 'claude-code-33', pid: 33, state: 'idle', changed_at: T0 - 10 }));
    store.set(session({ agent_id: 'claude-code-44', pid: null, state: 'gone', changed_at: T0 - 5 }));
    const rows = render(view);
    assert.deepEqual(
      rows.map((r) => [r.label, r.description, r.iconPath?.id, r.contextValue]),
      [
        ['Claude Code 22', '2 permissions · ~/src/app · 3m', 'bell-dot', 'hiveSession.waiting'],
        ['Claude Code 11', 'working · ~/src/api · <1m', 'sync~spin', 'hiveSession.working'],
        ['Claude Code 33', 'idle · <1m', 'circle-outline', 'hiveSession.idle'],
        ['Claude Code 44', 'gone · <1m', 'circle-slash', 'hiveSession.gone'],
      ],
    );
    assert.deepEqual(rows[0].command, { command: 'hive.openSession', title: 'Open', arguments: ['claude-code-22'] });
    assert.match(rows[0].tooltip ?? '', /^Claude Code 22 \(claude-code-22\): 2 permissions\nClick to answer its oldest prompt\./);
    assert.deepEqual(view.badge(), { value: 1, tooltip: '1 agent session waiting on you' });
    view.dispose();
  });

  test('updates: a record changed in place redraws its row; a state change or a removal the list; the badge follows', () => {
    const store = new SessionStore();
    const timers = new FakeTimers();
    const clock = new Clock(T0);
    const view = new SessionsTreeProvider(store, clock.now, timers, HOME);
    const fired = watch(view);
    const a = session({ agent_id: 'a', agent: null, display: null, state: 'working', changed_at: T0 });
    store.set(a);
    assert.equal(view.ticking, true, 'the age timer runs while there are rows');
    render(view);
    store.set({ ...a, message: 'still at it' });
    store.set({ ...a, state: 'waiting', questions: 1, prompt_ids: ['p'], changed_at: T0 + 1 });
    assert.deepEqual(fired, ['all', ['a'], 'all']);
    assert.equal(view.badge()?.value, 1);
    assert.equal(render(view)[0].description, '1 question · <1m');

    // The age changes to the minute: only that row is redrawn, and only then.
    fired.length = 0;
    clock.advance(30);
    timers.tick();
    assert.deepEqual(fired, []);
    clock.advance(40);
    timers.tick();
    assert.deepEqual(fired, [['a']]);
    assert.equal(render(view)[0].description, '1 question · 1m');

    fired.length = 0;
    store.remove('a');
    assert.deepEqual(fired, ['all']);
    assert.deepEqual(view.getChildren(), []);
    assert.equal(view.badge(), undefined);
    assert.equal(view.ticking, false, 'no rows, no timer');
    view.dispose();
  });
});

describe("a row's click", () => {
  beforeEach(() => mock.reset());

  function fixture(): { store: SessionStore; queue: PromptQueue; opened: string[] } {
    return { store: new SessionStore(), queue: new PromptQueue(), opened: [] };
  }

  test('a session waiting on prompts opens its oldest one, as the Pending view does', async () => {
    const { store, queue, opened } = fixture();
    const clock = new Clock(T0);
    const newer = record(clock, { agent_id: 'claude-code-22', created_at: T0 - 5 });
    const older = record(clock, { agent_id: 'claude-code-22', created_at: T0 - 50 });
    queue.add(newer);
    queue.add(older);
    store.set(session({ agent_id: 'claude-code-22', state: 'waiting', questions: 2, prompt_ids: [newer.id, older.id, 'not-here'] }));
    await openSession('claude-code-22', { store, queue, answer: (id) => opened.push(id) });
    assert.deepEqual(opened, [older.id]);
    assert.deepEqual(mock.messages, []);
  });

  test("one that does not wait: the terminal whose shell is the agent's ancestor is shown", async () => {
    const { store, queue, opened } = fixture();
    const shown: string[] = [];
    const terminal = (name: string, pid: number | undefined) => ({
      name,
      processId: Promise.resolve(pid),
      show: () => shown.push(name),
    });
    window.terminals = [terminal('bash', 500), terminal('other', 600), terminal('no pid', undefined)];
    const parents = new Map([
      [4242, 601], // claude's parent: a shell under terminal "other"
      [601, 600],
      [600, 1],
    ]);
    store.set(session({ agent_id: 'claude-code-4242', pid: 4242, state: 'working' }));
    await openSession('claude-code-4242', { store, queue, answer: (id) => opened.push(id), parentOf: (p) => parents.get(p) });
    assert.deepEqual(shown, ['other']);
    assert.deepEqual(opened, []);
  });

  test('no terminal of this window runs it: a message says where it runs', async () => {
    const { store, queue, opened } = fixture();
    store.set(
      session({
        agent_id: 'claude-code-4242',
        pid: 4242,
        state: 'idle',
        project_dir: `${HOME}/src/app`,
        terminal: 'tmux:%3@/tmp/tmux-1000/default',
      }),
    );
    await openSession('claude-code-4242', { store, queue, answer: (id) => opened.push(id), parentOf: () => 1, home: HOME });
    assert.deepEqual(
      mock.messages.map((m) => m.text),
      ['Hive: Claude Code 4242 runs in tmux:%3@/tmp/tmux-1000/default, in ~/src/app, as pid 4242; no terminal of this window runs it.'],
    );
    store.set(session({ agent_id: 'gone', agent: null, display: null, state: 'gone', project_dir: '/srv/x' }));
    await openSession('gone', { store, queue, answer: (id) => opened.push(id), home: HOME });
    assert.equal(mock.messages[1].text, 'Hive: gone has ended (it ran in /srv/x).');
    await openSession('unknown', { store, queue, answer: (id) => opened.push(id) });
    assert.deepEqual(mock.statusMessages, ['Hive: that session is no longer listed']);
  });
});
