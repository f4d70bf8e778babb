/**
 * Activation test of src/extension.ts with the `vscode` module and
 * `vscode-languageclient/node` MOCKED (test/vscode-mock.ts,
 * test/languageclient-mock.ts), BECAUSE VS Code itself cannot be downloaded
 * or run on this machine. It checks the wiring only: commands, the sidecar
 * command line, the output channel, subscribing once running, prompts reaching
 * the UI, agent sessions reaching the Sessions view, and a restart when a
 * `hive.*` setting changes.
 */
import './register-vscode-mock';
import './register-languageclient-mock';
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as extension from '../src/extension';
import { fakeMemento, session, settle } from './helpers';
import { LanguageClient } from './languageclient-mock';
import { changeConfig, FakeInputBox, mock } from './vscode-mock';

test('activate wires the client, commands, status bar, view and restarts on hive.* changes', async () => {
  mock.reset();
  LanguageClient.instances = [];
  // No opening moment: this test types into the box the instant it opens.
  mock.config = { 'hive.pythonPath': '/venv/bin/python', 'hive.by': 'carol', 'hive.openGraceSeconds': 0 };
  const context = { subscriptions: [] as { dispose(): void }[], workspaceState: fakeMemento() };
  await extension.activate(context as never);

  assert.deepEqual(
    [...mock.commands.keys()].sort(),
    [
      'hive.answerNext',
      'hive.answerPrompt',
      'hive.answerWith',
      'hive.ask',
      'hive.cancelPrompt',
      'hive.deferAll',
      'hive.deferPrompt',
      'hive.dismissExpired',
      'hive.openSession',
      'hive.restart',
      'hive.showExpired',
      'hive.showLog',
      'hive.showPending',
    ],
  );
  assert.deepEqual(mock.outputChannels, [{ name: 'Hive', options: { log: true } }]);
  assert.ok(mock.treeProviders.has('hive.pending'));

  assert.equal(LanguageClient.instances.length, 1);
  const client = LanguageClient.instances[0];
  assert.equal(client.id, 'hive', 'the client id makes hive.trace.server apply');
  assert.equal(client.serverOptions.command, '/venv/bin/python');
  assert.deepEqual(client.serverOptions.args, ['-m', 'hive_rpc', 'lsp']);
  assert.deepEqual(client.clientOptions.initializationOptions, { progress: false });
  assert.equal(client.started, true);
  await settle();
  // Subscribed (with the agent sessions), then the questions that expired unseen
  // (the subscription does not resend them); the sessions come by push, never asked for.
  assert.deepEqual(client.requests.map((r) => r.method), ['hive/subscribe', 'hive/list']);
  assert.deepEqual(client.requests[0].params, { sessions: true });
  assert.deepEqual(client.requests[1].params, { expired_unseen: true });
  const sessionsView = mock.treeProviders.get('hive.sessions') as { getChildren(): string[] } | undefined;
  assert.ok(sessionsView, 'the Sessions view is registered');
  client.emit('hive/session', session({ agent_id: 'claude-code-4242', pid: 4242, state: 'working' }));
  assert.deepEqual(sessionsView.getChildren(), ['claude-code-4242'], 'a hive/session is a row');
  // A reconnection: the new subscription's replay (here: none) is the whole list.
  client.emit('hive/connection', { connected: true, message: '' });
  assert.deepEqual(sessionsView.getChildren(), []);

  // The hub's store health shows in the status bar.
  client.emit('hive/health', { degraded: 'store: database or disk is full' });
  assert.equal(mock.statusBarItems[0].text, '$(warning) 0');
  assert.match(String(mock.statusBarItems[0].tooltip), /degraded: database or disk is full/);
  client.emit('hive/health', { degraded: null });
  assert.equal(mock.statusBarItems[0].visible, false);

  // A prompt from the sidecar shows in the status bar and a notification; it
  // opens only when the human asks (Hive: Answer Next Question).
  const now = Date.now() / 1000;
  client.emit('hive/prompt', {
    id: 'abcdef0123456789', agent_id: 'deployer', question: 'Ship it?', created_at: now, deadline_at: now + 60,
    max_deadline_at: now + 86400, choices: null, schema: null, urgent: false, timeout_s: null, task_id: null,
    in_reply_to: null, status: 'pending', typing_at: null, answered_at: null, expired_at: null, cancelled_at: null,
    expiry_reason: null, answer: null, by: null, action: null, expired: false,
  });
  assert.equal(mock.open(), undefined, 'nothing opens by itself');
  await settle();
  assert.equal(mock.statusBarItems[0].text, '$(comment-discussion) 1');
  assert.match(mock.openProgress()[0].messages[0], /^deployer asks: Ship it\? — /);
  await mock.commands.get('hive.answerNext')!();
  const box = mock.open();
  assert.ok(box instanceof FakeInputBox);
  box.type('yes');
  box.accept();
  await settle();
  assert.deepEqual(client.notifications, [{ method: 'hive/typing', params: { id: 'abcdef0123456789' } }]);
  assert.deepEqual(
    client.requests.filter((r) => r.method === 'hive/shown' || r.method === 'hive/respond'),
    [
      { method: 'hive/shown', params: { id: 'abcdef0123456789' } },
      { method: 'hive/respond', params: { id: 'abcdef0123456789', answer: 'yes', by: 'carol' } },
    ],
  );

  // Changing a hive.* setting restarts the sidecar with the new settings.
  changeConfig({ 'hive.socket': '/tmp/other.sock', 'hive.command': 'hive-rpc lsp' });
  await settle();
  assert.equal(client.stopped, true);
  assert.equal(LanguageClient.instances.length, 2);
  const second = LanguageClient.instances[1];
  assert.equal(second.serverOptions.command, 'hive-rpc');
  assert.deepEqual(second.serverOptions.args, ['lsp', '--socket', '/tmp/other.sock']);
  assert.deepEqual(second.requests.map((r) => r.method), ['hive/subscribe', 'hive/list']);

  // Hive: Restart Sidecar.
  await mock.commands.get('hive.restart')!();
  await settle();
  assert.equal(second.stopped, true);
  assert.equal(LanguageClient.instances.length, 3);

  await extension.deactivate();
  assert.equal(LanguageClient.instances[2].stopped, true);
  for (const d of context.subscriptions) {
    d.dispose();
  }
});
