/**
 * Settings changes and `hive.trace.server`, through src/extension.ts with the
 * `vscode` module and `vscode-languageclient/node` MOCKED (test/vscode-mock.ts,
 * test/languageclient-mock.ts): which changes restart the sidecar, that a
 * restart keeps deferred questions deferred, and the trace channel's level.
 * The same in the real editor: tests/vscode/test_vscode_settings.py.
 */
import './register-vscode-mock';
import './register-languageclient-mock';
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { restartNeeded, RESTART_SETTINGS } from '../src/config';
import * as extension from '../src/extension';
import { TraceChannel } from '../src/trace';
import { fakeMemento, settle } from './helpers';
import { LanguageClient } from './languageclient-mock';
import { changeConfig, FakeInputBox, FakeLogOutputChannel, LogLevel, mock } from './vscode-mock';

function promptRecord(id: string, question: string): object {
  const now = Date.now() / 1000;
  return {
    id, agent_id: 'deployer', question, created_at: now, deadline_at: now + 300, max_deadline_at: now + 86400,
    choices: null, schema: null, urgent: false, timeout_s: 300, task_id: null, in_reply_to: null, status: 'pending',
    typing_at: null, answered_at: null, expired_at: null, cancelled_at: null, expiry_reason: null, answer: null,
    by: null, action: null, expired: false,
  };
}

test('restartNeeded: only pythonPath, command and socket', () => {
  assert.deepEqual([...RESTART_SETTINGS], ['hive.pythonPath', 'hive.command', 'hive.socket']);
  const affects = (changed: string[]) => (section: string) =>
    changed.some((k) => k === section || k.startsWith(`${section}.`));
  for (const key of ['hive.pythonPath', 'hive.command', 'hive.socket']) {
    assert.equal(restartNeeded(affects([key])), true, key);
  }
  for (const key of ['hive.timeoutSeconds', 'hive.by', 'hive.autoAsk', 'hive.idleSeconds', 'hive.trace.server']) {
    assert.equal(restartNeeded(affects([key])), false, key);
  }
});

test('live settings keep the sidecar; sidecar settings restart it, and deferred questions stay deferred', async () => {
  mock.reset();
  LanguageClient.instances = [];
  mock.config = { 'hive.pythonPath': '/venv/bin/python', 'hive.by': 'carol' };
  const context = { subscriptions: [] as { dispose(): void }[], workspaceState: fakeMemento() };
  await extension.activate(context as never);
  try {
    await settle();
    await liveAndRestart();
  } finally {
    // Also when an assertion failed: an open box's countdown would keep the test running.
    await extension.deactivate();
    for (const d of context.subscriptions) {
      d.dispose();
    }
  }
});

async function liveAndRestart(): Promise<void> {
  assert.equal(LanguageClient.instances.length, 1);
  const first = LanguageClient.instances[0];

  // Settings read when used: no restart, and the new value applies.
  changeConfig({
    'hive.by': 'dave',
    'hive.timeoutSeconds': 10,
    'hive.autoAsk': true,
    'hive.idleSeconds': 0,
    'hive.trace.server': 'verbose',
  });
  await settle();
  assert.equal(LanguageClient.instances.length, 1, 'no new sidecar');
  assert.equal(first.stopped, false);
  first.emit('hive/prompt', promptRecord('aaaaaaaaaaaaaaa1', 'Ship it?'));
  const box = mock.open();
  assert.ok(box instanceof FakeInputBox);
  box.type('y');
  box.accept();
  await settle();
  assert.deepEqual(first.requests.at(-1), {
    method: 'hive/respond',
    params: { id: 'aaaaaaaaaaaaaaa1', answer: 'y', by: 'dave' },
  });
  first.emit('hive/dismiss', { id: 'aaaaaaaaaaaaaaa1', status: 'responded', by: 'dave', action: 'accept' });

  // A question put aside (Escape), and one left waiting behind it.
  first.emit('hive/prompt', promptRecord('bbbbbbbbbbbbbbb2', 'Later?'));
  const deferred = mock.open();
  assert.ok(deferred instanceof FakeInputBox);
  deferred.escape();
  await settle();
  assert.equal(mock.open(), undefined);

  // hive.pythonPath changes the command line: a new sidecar.
  changeConfig({ 'hive.pythonPath': '/other/bin/python' });
  await settle();
  assert.equal(first.stopped, true);
  assert.equal(LanguageClient.instances.length, 2);
  const second = LanguageClient.instances[1];
  assert.equal(second.serverOptions.command, '/other/bin/python');
  // The new sidecar's subscription resends the pending question: it stays deferred.
  second.emit('hive/prompt', promptRecord('bbbbbbbbbbbbbbb2', 'Later?'));
  await settle();
  assert.equal(mock.open(), undefined, 'a deferred question does not pop up again after a restart');
  assert.deepEqual(
    mock.messages.filter((m) => m.text.includes('Later?')),
    [],
    'nor is it announced again',
  );
  // ... and Answer Next still asks it.
  await mock.commands.get('hive.answerNext')!();
  assert.equal((mock.open() as FakeInputBox | undefined)?.prompt?.includes('Later?'), true);
  mock.open()?.escape();
  await settle();

  // hive.command set: hive.pythonPath no longer changes the command line, so no restart.
  changeConfig({ 'hive.command': ['hive-rpc', 'lsp'] });
  await settle();
  assert.equal(LanguageClient.instances.length, 3);
  changeConfig({ 'hive.pythonPath': '/third/bin/python' });
  await settle();
  assert.equal(LanguageClient.instances.length, 3, 'same command line: the sidecar is kept');
  assert.equal(LanguageClient.instances[2].stopped, false);
}

test('hive.trace.server alone turns the trace on, into the Hive channel at a level it shows', () => {
  mock.reset();
  mock.config = { 'hive.trace.server': 'off' };
  const channel = new FakeLogOutputChannel('Hive');
  const trace = new TraceChannel(channel as never);
  const levels: LogLevel[] = [];
  trace.onDidChangeLogLevel((l) => levels.push(l as LogLevel));
  assert.equal(trace.logLevel, LogLevel.Info, 'off: the channel level, so the client does not trace');
  changeConfig({ 'hive.trace.server': 'messages' });
  assert.equal(trace.logLevel, LogLevel.Trace);
  changeConfig({ 'hive.trace.server': 'verbose' });
  assert.deepEqual(levels, [LogLevel.Trace], 'told once: the level did not change again');
  trace.trace("Sending request 'hive/subscribe - (1)'.");
  assert.deepEqual(channel.lines, ["[info] Sending request 'hive/subscribe - (1)'."], 'at Info: the channel shows it');
  // The user sets the channel to Trace themselves: trace lines go at Trace.
  channel.setLogLevel(LogLevel.Trace);
  trace.trace('Received notification');
  assert.equal(channel.lines.at(-1), '[trace] Received notification');
  changeConfig({ 'hive.trace.server': 'off' });
  assert.equal(trace.logLevel, LogLevel.Trace, "the channel's own Trace level still traces, as vscode-languageclient does");
  channel.setLogLevel(LogLevel.Info);
  assert.equal(trace.logLevel, LogLevel.Info);
  assert.deepEqual(levels, [LogLevel.Trace, LogLevel.Info]);
  trace.dispose();
  changeConfig({ 'hive.trace.server': 'verbose' });
  assert.deepEqual(levels, [LogLevel.Trace, LogLevel.Info], 'disposed: no longer follows');
});
