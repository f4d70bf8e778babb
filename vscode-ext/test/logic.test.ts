/**
 * Tests of the pure logic modules (no `vscode` import, so no mock is needed):
 * countdown text, the prompt queue, schema fields, respond params, settings.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, test } from 'node:test';
import { findOnPath, serverCommand, splitCommandLine, readSettings } from '../src/config';
import { autoDismissText, countdownText, formatDuration, formatMinutes, timeLeftText } from '../src/countdown';
import { SwitchableHubClient } from '../src/hubClient';
import type { Disposable } from '../src/hubClient';
import type { MessageSignature } from 'vscode-jsonrpc';
import { ClientNotifications, Requests, ServerNotifications } from '../src/protocol';
import type { PromptSchema } from '../src/protocol';
import { plain, visible } from '../src/plainText';
import { PromptQueue } from '../src/queue';
import {
  acceptParams,
  askParams,
  classifyRespondError,
  cancelParams,
  declineParams,
  dismissMessage,
} from '../src/respond';
import { booleanAnswer, checkMulti, fieldsOf, parseFieldText, promptKind, yesNoChoices } from '../src/schema';
import { Clock, FakeHub, record, rpcError } from './helpers';

describe('countdown', () => {
  test('formatDuration', () => {
    assert.equal(formatDuration(0), '0s');
    assert.equal(formatDuration(-3), '0s');
    assert.equal(formatDuration(0.2), '1s');
    assert.equal(formatDuration(59), '59s');
    assert.equal(formatDuration(60), '1m00s');
    assert.equal(formatDuration(295), '4m55s');
    assert.equal(formatDuration(3600), '1h00m');
    assert.equal(formatDuration(86399), '23h59m');
    assert.equal(formatDuration(90000), '1d01h');
  });

  test('countdownText: only with a timeout, and not once typing started', () => {
    const clock = new Clock();
    const r = record(clock, { created_at: clock.t, timeout_s: 10 });
    assert.equal(countdownText(r, clock.t + 3), '7s left');
    assert.equal(countdownText(r, clock.t + 30), '0s left');
    assert.equal(countdownText(r, clock.t, true), null);
    assert.equal(countdownText({ ...r, typing_at: clock.t }, clock.t), null);
    assert.equal(countdownText({ ...r, timeout_s: null }, clock.t), null);
    assert.equal(timeLeftText(r, clock.t), '10s left');
  });

  test("autoDismissText: the seed's placeholder (Calva's human-intelligence tool), then the time left", () => {
    const clock = new Clock();
    const r = record(clock, { created_at: clock.t, timeout_s: 60 });
    assert.equal(autoDismissText(r, clock.t + 5), 'Start typing to cancel auto-dismiss (60s timeout)... 55s left');
    const long = record(clock, { created_at: clock.t, timeout_s: 3600 });
    assert.equal(autoDismissText(long, clock.t), 'Start typing to cancel auto-dismiss (1h00m timeout)... 1h00m left');
    assert.equal(autoDismissText(r, clock.t, true), null);
    assert.equal(autoDismissText({ ...r, timeout_s: null }, clock.t), null);
  });

  test('formatMinutes: to the minute, rounded up; under a minute', () => {
    assert.equal(formatMinutes(0), '<1m');
    assert.equal(formatMinutes(59.9), '<1m');
    assert.equal(formatMinutes(60), '1m');
    assert.equal(formatMinutes(61), '2m');
    assert.equal(formatMinutes(295), '5m');
    assert.equal(formatMinutes(3600), '1h00m');
    assert.equal(formatMinutes(3601), '1h01m');
    assert.equal(formatMinutes(86399), '1d00h');
    assert.equal(formatMinutes(90000), '1d01h');
  });

  test('timeLeftText: a countdown, "no time limit", or stopped by typing here or elsewhere', () => {
    const clock = new Clock();
    const r = record(clock, { created_at: clock.t, timeout_s: 300 });
    assert.equal(timeLeftText(r, clock.t + 5), '4m55s left');
    assert.equal(timeLeftText(r, clock.t + 5, false, true), '5m left');
    // No "1d00h left" (the hub's maximum lifetime) for a question without a timeout.
    const free = record(clock, { created_at: clock.t, timeout_s: null });
    assert.equal(free.deadline_at, free.max_deadline_at);
    assert.equal(timeLeftText(free, clock.t), 'no time limit');
    // hive/update after typing elsewhere: typing_at set, the deadline moved to the maximum.
    const typed = { ...r, typing_at: clock.t + 1, deadline_at: r.max_deadline_at };
    assert.equal(timeLeftText(typed, clock.t + 2), 'typing: countdown stopped');
    assert.equal(timeLeftText(r, clock.t + 2, true), 'typing: countdown stopped');
    assert.equal(timeLeftText({ ...free, typing_at: clock.t }, clock.t), 'typing: countdown stopped');
  });
});

describe('PromptQueue', () => {
  test('oldest first, deferral, typed once, waiting count, change events', () => {
    const clock = new Clock();
    const q = new PromptQueue();
    let changes = 0;
    q.onDidChange(() => changes++);
    const late = record(clock, { created_at: clock.t + 10 });
    const early = record(clock, { created_at: clock.t });
    assert.equal(q.add(late), true);
    assert.equal(q.add(early), true);
    assert.equal(q.add(early), false, 'a resent prompt is not new');
    assert.deepEqual(q.records().map((r) => r.id), [early.id, late.id]);
    assert.equal(q.next()?.record.id, early.id);
    q.defer(early.id);
    assert.equal(q.next()?.record.id, late.id);
    assert.equal(q.next({ includeDeferred: true })?.record.id, early.id);
    assert.equal(q.next({ exclude: late.id }), undefined);
    assert.equal(q.waitingBesides(early.id), 1);
    assert.equal(q.waitingBesides(undefined), 2);
    assert.equal(q.markTyped(late.id), true);
    assert.equal(q.markTyped(late.id), false);
    q.setRetry(early.id, 'bad', 'x');
    assert.equal(q.get(early.id)?.deferred, false);
    assert.equal(q.get(early.id)?.retryMessage, 'bad');
    assert.equal(q.remove(early.id)?.record.id, early.id);
    assert.equal(q.remove(early.id), undefined);
    assert.equal(q.size, 1);
    q.clear();
    assert.equal(q.size, 0);
    assert.ok(changes >= 6);
  });

  test('a snapshot of thousands in order, then out of order, stays oldest first', () => {
    const clock = new Clock();
    const q = new PromptQueue();
    const snapshot = Array.from({ length: 20000 }, (_, i) => record(clock, { created_at: clock.t + i }));
    for (const r of snapshot) {
      q.add(r);
      assert.equal(q.next()?.record.id, snapshot[0].id); // what asking the next one reads
    }
    assert.deepEqual(q.records().map((r) => r.id), snapshot.map((r) => r.id));
    const tie = record(clock, { created_at: clock.t + 19999 });
    const older = record(clock, { created_at: clock.t - 1 });
    q.add(tie);
    q.add(older);
    const ids = q.records().map((r) => r.id);
    assert.deepEqual(ids.slice(0, 2), [older.id, snapshot[0].id]);
    assert.deepEqual(ids.slice(-2), [snapshot[19999].id, tie.id], 'a tie keeps arrival order');
    q.remove(snapshot[0].id);
    assert.equal(q.next()?.record.id, older.id);
    q.remove(older.id);
    assert.equal(q.next()?.record.id, snapshot[1].id);
    q.clear();
    assert.deepEqual(q.records(), []);
    q.add(tie);
    assert.deepEqual(q.records().map((r) => r.id), [tie.id]);
  });

  test('a prompt already typed into (typing_at) counts as typed', () => {
    const clock = new Clock();
    const q = new PromptQueue();
    const r = record(clock, { typing_at: clock.t });
    q.add(r);
    assert.equal(q.markTyped(r.id), false);
  });
});

describe('schema and prompt kinds', () => {
  const schema: PromptSchema = {
    type: 'object',
    properties: {
      env: { type: 'string', enum: ['staging', 'prod'], enumNames: ['Staging', 'Production'] },
      replicas: { type: 'integer', minimum: 1, maximum: 10, title: 'Replicas' },
      ratio: { type: 'number' },
      name: { type: 'string', minLength: 2, maxLength: 4 },
      ok: { type: 'boolean' },
      tier: { type: 'string', oneOf: [{ const: 'a', title: 'Tier A' }, { const: 'b' }] },
      tags: { type: 'array', items: { anyOf: [{ const: 'x' }, { const: 'y' }] }, minItems: 1, maxItems: 1 },
    },
    required: ['env', 'replicas', 'name'],
  };

  test('promptKind', () => {
    assert.equal(promptKind({ choices: null, schema: null }), 'text');
    assert.equal(promptKind({ choices: ['a', 'b'], schema: null }), 'choices');
    assert.equal(promptKind({ choices: ['yes', 'no'], schema: null }), 'boolean');
    assert.equal(promptKind({ choices: ['N', 'Y'], schema: null }), 'boolean');
    assert.equal(promptKind({ choices: ['yes', 'no', 'maybe'], schema: null }), 'choices');
    assert.equal(promptKind({ choices: null, schema }), 'schema');
    assert.equal(
      promptKind({ choices: null, schema: { type: 'object', properties: { go: { type: 'boolean' } } } }),
      'boolean',
    );
    assert.deepEqual(yesNoChoices(['No', 'Yes']), { yes: 'Yes', no: 'No' });
    assert.equal(booleanAnswer({ choices: ['y', 'n'], schema: null }, false), 'n');
    assert.deepEqual(
      booleanAnswer({ choices: null, schema: { type: 'object', properties: { go: { type: 'boolean' } } } }, true),
      { go: true },
    );
  });

  test('fieldsOf keeps the order and reads enum/oneOf/anyOf', () => {
    const fields = fieldsOf(schema);
    assert.deepEqual(
      fields.map((f) => [f.name, f.kind, f.required]),
      [
        ['env', 'enum', true],
        ['replicas', 'integer', true],
        ['ratio', 'number', false],
        ['name', 'string', true],
        ['ok', 'boolean', false],
        ['tier', 'enum', false],
        ['tags', 'multi', false],
      ],
    );
    assert.deepEqual(fields[0].options, [
      { value: 'staging', label: 'Staging' },
      { value: 'prod', label: 'Production' },
    ]);
    assert.equal(fields[1].label, 'Replicas');
    assert.deepEqual(fields[5].options?.map((o) => o.label), ['Tier A', 'b']);
    assert.deepEqual(fields[6].options?.map((o) => o.value), ['x', 'y']);
  });

  test('parseFieldText and checkMulti', () => {
    const [, replicas, ratio, name, , , tags] = fieldsOf(schema);
    assert.deepEqual(parseFieldText(replicas, ' 3 '), { ok: true, value: 3 });
    assert.deepEqual(parseFieldText(replicas, '3.5'), { ok: false, message: 'Replicas wants an integer' });
    assert.deepEqual(parseFieldText(replicas, ''), { ok: false, message: 'Replicas wants an integer' });
    assert.deepEqual(parseFieldText(replicas, '0'), { ok: false, message: 'Replicas must be at least 1' });
    assert.deepEqual(parseFieldText(ratio, ''), { ok: true, omit: true });
    assert.deepEqual(parseFieldText(ratio, '1e3'), { ok: true, value: 1000 });
    assert.deepEqual(parseFieldText(ratio, 'x'), { ok: false, message: 'ratio wants a number' });
    assert.deepEqual(parseFieldText(name, 'a'), { ok: false, message: 'name must be at least 2 characters' });
    assert.deepEqual(parseFieldText(name, 'abcde'), { ok: false, message: 'name must be at most 4 characters' });
    assert.deepEqual(parseFieldText(name, 'ab'), { ok: true, value: 'ab' });
    assert.equal(checkMulti(tags, []), 'tags: pick at least 1');
    assert.equal(checkMulti(tags, ['x', 'y']), 'tags: pick at most 1');
    assert.equal(checkMulti(tags, ['x']), null);
  });
});

describe('respond params and errors', () => {
  test('accept, decline, cancel, ask', () => {
    assert.deepEqual(acceptParams('i', 'yes', 'alice'), { id: 'i', answer: 'yes', by: 'alice' });
    assert.deepEqual(acceptParams('i', { a: 1 }, ''), { id: 'i', answer: { a: 1 } });
    assert.deepEqual(declineParams('i', 'bob'), { id: 'i', action: 'decline', by: 'bob' });
    assert.deepEqual(cancelParams('i'), { id: 'i' });
    assert.deepEqual(askParams('Q?', ' a, b ,,a', 30, 'vscode'), {
      question: 'Q?',
      agent_id: 'vscode',
      choices: ['a', 'b'],
      timeout_s: 30,
    });
    assert.deepEqual(askParams('Q?', '', 0, 'vscode'), { question: 'Q?', agent_id: 'vscode' });
  });

  test('classifyRespondError and dismissMessage', () => {
    assert.equal(classifyRespondError(rpcError(-32004, 'bad')), 'invalid');
    assert.equal(classifyRespondError(rpcError(-32002, 'late')), 'gone');
    assert.equal(classifyRespondError(rpcError(-32003, 'closed')), 'gone');
    assert.equal(classifyRespondError(rpcError(-32001, 'nope')), 'gone');
    assert.equal(classifyRespondError(new Error('down')), 'other');
    assert.equal(
      dismissMessage({ status: 'responded', by: 'alice', action: 'accept' }),
      'Hive: that question was answered by alice',
    );
    assert.equal(dismissMessage({ status: 'expired', by: null, action: null }), 'Hive: that question expired');
    assert.equal(
      dismissMessage({ status: 'cancelled', by: 'codex', action: null }),
      'Hive: that question was withdrawn by codex',
    );
    assert.equal(
      dismissMessage({ status: 'responded', by: 'bob', action: 'decline' }),
      'Hive: that question was declined by bob',
    );
  });
});

describe('settings', () => {
  test('serverCommand: hive.command wins, else pythonPath -m hive_rpc lsp; --socket appended', () => {
    const nowhere = (): undefined => undefined;
    assert.deepEqual(serverCommand({ pythonPath: '', command: null, socket: '' }, nowhere), {
      command: 'python3',
      args: ['-m', 'hive_rpc', 'lsp'],
    });
    // No setting: hive-rpc from PATH when it is there (a pipx or venv install).
    const pipx = (name: string): string | undefined => (name === 'hive-rpc' ? '/home/u/.local/bin/hive-rpc' : undefined);
    assert.deepEqual(serverCommand({ pythonPath: '', command: null, socket: '/tmp/h.sock' }, pipx), {
      command: '/home/u/.local/bin/hive-rpc',
      args: ['lsp', '--socket', '/tmp/h.sock'],
    });
    assert.equal(serverCommand({ pythonPath: '/venv/bin/python', command: null, socket: '' }, pipx).command, '/venv/bin/python');
    assert.deepEqual(serverCommand({ pythonPath: '/venv/bin/python', command: null, socket: '/tmp/h.sock' }), {
      command: '/venv/bin/python',
      args: ['-m', 'hive_rpc', 'lsp', '--socket', '/tmp/h.sock'],
    });
    assert.deepEqual(serverCommand({ pythonPath: '/x', command: ['hive-rpc', 'lsp'], socket: '' }), {
      command: 'hive-rpc',
      args: ['lsp'],
    });
    assert.deepEqual(serverCommand({ pythonPath: '', command: '"/opt/my hive/hive-rpc" lsp --no-start', socket: 's' }), {
      command: '/opt/my hive/hive-rpc',
      args: ['lsp', '--no-start', '--socket', 's'],
    });
    assert.deepEqual(serverCommand({ pythonPath: 'py', command: '  ', socket: '' }).command, 'py');
    assert.deepEqual(serverCommand({ pythonPath: 'py', command: [], socket: '' }).command, 'py');
  });

  test('findOnPath: the first executable file of that name in PATH', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hive-path-'));
    try {
      const notExec = path.join(dir, 'a');
      const exec = path.join(dir, 'b');
      fs.mkdirSync(notExec);
      fs.writeFileSync(path.join(notExec, 'hive-rpc'), '');
      fs.mkdirSync(exec);
      fs.writeFileSync(path.join(exec, 'hive-rpc'), '#!/bin/sh\n', { mode: 0o755 });
      fs.mkdirSync(path.join(dir, 'c', 'hive-rpc'), { recursive: true });
      const pathVar = [path.join(dir, 'c'), notExec, '', exec].join(path.delimiter);
      assert.equal(findOnPath('hive-rpc', pathVar), path.join(exec, 'hive-rpc'));
      assert.equal(findOnPath('hive-rpc', notExec), undefined);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('splitCommandLine', () => {
    assert.deepEqual(splitCommandLine(`a 'b c' "d \\" e" f\\ g ''`), ['a', 'b c', 'd " e', 'f g', '']);
    assert.throws(() => splitCommandLine('a "b'), /unterminated/);
  });

  test('readSettings', () => {
    const values: Record<string, unknown> = { pythonPath: 'py', socket: 's', timeoutSeconds: 60, by: 'me' };
    assert.equal(readSettings((k) => ({ ...values, autoAsk: true })[k] as never).autoAsk, true);
    // Nothing opens by itself unless the human turned it on (issue 27).
    assert.deepEqual(
      readSettings((k) => values[k] as never),
      { pythonPath: 'py', command: null, socket: 's', timeoutSeconds: 60, by: 'me', autoAsk: false, idleSeconds: 2 },
    );
    const idle = (v: unknown): number => readSettings((k) => ({ idleSeconds: v })[k] as never).idleSeconds;
    assert.equal(idle(0), 0);
    assert.equal(idle(0.5), 0.5);
    assert.equal(idle(-1), 2);
    assert.equal(idle('soon'), 2);
  });
});

describe('SwitchableHubClient', () => {
  test('forwards to the current client and moves notification handlers on restart', async () => {
    const s = new SwitchableHubClient();
    await assert.rejects(s.sendRequest(Requests.subscribe, {}), /not running/);
    const seen: unknown[] = [];
    s.onNotification(ServerNotifications.prompt, (p) => seen.push(p));
    const first = new FakeHub();
    s.setTarget(first);
    first.emit('hive/prompt', 1);
    const second = new FakeHub();
    s.setTarget(second);
    first.emit('hive/prompt', 'stale');
    second.emit('hive/prompt', 2);
    s.sendNotification(ClientNotifications.typing, { id: 'x' });
    await s.sendRequest(Requests.cancel, { id: 'x' });
    assert.deepEqual(seen, [1, 2]);
    assert.deepEqual(second.notifications, [{ method: 'hive/typing', params: { id: 'x' } }]);
    assert.deepEqual(second.requests, [{ method: 'hive/cancel', params: { id: 'x' } }]);
  });

  test('several handlers of one method all run, on a client that keeps one per method', () => {
    // vscode-languageclient keeps one handler per method: a second onNotification
    // replaces the first (the status bar and the request_human_input tool both follow
    // hive/connection).
    class OneHandlerHub extends FakeHub {
      readonly only = new Map<string, (p: unknown) => void>();
      registrations = 0;
      onNotification<P>(type: MessageSignature, handler: (params: P) => void): Disposable {
        this.registrations++;
        this.only.set(type.method, handler as (p: unknown) => void);
        return { dispose: () => this.only.delete(type.method) };
      }
      emit(method: string, params: unknown): void {
        this.only.get(method)?.(params);
      }
    }
    const s = new SwitchableHubClient();
    const seen: string[] = [];
    const a = s.onNotification(ServerNotifications.prompt, (p) => seen.push(`a${String(p)}`));
    const target = new OneHandlerHub();
    s.setTarget(target);
    s.onNotification(ServerNotifications.prompt, (p) => seen.push(`b${String(p)}`));
    target.emit('hive/prompt', 1);
    assert.deepEqual(seen, ['a1', 'b1']);
    assert.equal(target.registrations, 1, 'one handler on the client');
    a.dispose();
    target.emit('hive/prompt', 2);
    assert.deepEqual(seen, ['a1', 'b1', 'b2']);
  });
});

describe('agent text as shown', () => {
  test('visible: invisible characters go by category and property, not by a list', () => {
    // Format characters (Cf) and the rest of Default_Ignorable_Code_Point, as the hub
    // and the Emacs package strip them (issue 26).
    for (const chars of [
      '\u00ad', '\u034f', '\u061c', '\u115f\u1160\u3164\uffa0', '\u180b\u180e\u180f',
      '\u200b\u200c\u200d', '\u2065\u206f', '\ufe00\ufe0f', '\ufeff', '\ufff9\ufffa\ufffb',
      '\u{E0001}\u{E0041}\u{E007F}', '\u{E0100}\u{E0FFF}', '\u202e\u2066',
    ]) {
      assert.equal(visible(`r${chars}m -rf${chars}`), 'rm -rf', JSON.stringify(chars));
    }
    assert.equal(visible('a\x1b[31mb\x07\r\x9bc'), 'a[31mbc');
    assert.equal(visible('one\ntwo\tthree\u2028four'), 'one\ntwo\tthree\nfour');
    const kept = 'Grüße, 日本, 🐝, \u0915\u094d\u0937, e\u0301, \ue000, a\u00a0b';
    assert.equal(visible(kept), kept);
  });

  test('plain: no icon, no link, nothing invisible', () => {
    assert.equal(plain('$(check) ok').startsWith('$(check)'), false);
    assert.equal(plain('[x](command:y)').includes(']('), false);
    assert.equal(plain('$\u00ad(check)').startsWith('$(check)'), false);
  });
});
