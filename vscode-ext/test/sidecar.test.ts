/**
 * src/sidecar.ts with real processes (no `vscode`): what a run that could not
 * start, exited or was killed leaves for the failure message, and the restart
 * budget. The notification itself is read in a real editor by
 * tests/vscode/test_vscode_failures.py.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { commandLine, failureMessage, Sidecar } from '../src/sidecar';

describe('Sidecar runs', () => {
  test('a command that exits 3: the command, the code and its last stderr lines', async () => {
    const s = new Sidecar();
    const lines = Array.from({ length: 60 }, (_, i) => `echo line${i} >&2`).join('; ');
    s.spawn({ command: 'sh', args: ['-c', `${lines}; printf 'no newline at the end' >&2; exit 3`] }, {});
    const run = await s.whenEnded(10_000);
    assert.ok(run);
    assert.deepEqual(run.exit, { code: 3, signal: null });
    assert.equal(run.stderr.length, 50, 'only the last lines are kept');
    assert.equal(run.stderr.at(-1), 'no newline at the end');
    const text = failureMessage(run);
    assert.match(text, /^Hive: the sidecar did not start: sh -c "echo line0 .*" exited with code 3\./);
    assert.match(text, /Its last output: "line57" · "line58" · "line59" · "no newline at the end"\.$/);
  });

  test('a program that does not exist: not found, and which settings to check', async () => {
    const s = new Sidecar();
    s.spawn({ command: '/nonexistent/hive-rpc', args: ['lsp'] }, {});
    const run = await s.whenEnded(10_000);
    assert.equal(run?.spawnError?.code, 'ENOENT');
    assert.equal(run?.exit, undefined);
    assert.equal(
      failureMessage(run!),
      'Hive: the sidecar did not start: /nonexistent/hive-rpc lsp could not be run (spawn /nonexistent/hive-rpc ENOENT: ' +
        '/nonexistent/hive-rpc was not found). It printed nothing on stderr. Set Hive: Python Path (hive.pythonPath) to a Python that has ' +
        'hive-rpc installed, or Hive: Command (hive.command) to the full command: Settings (Ctrl+,) > Extensions > Hive, ' +
        'on the Remote tab when VS Code runs on a server (code-server, Remote-SSH, WSL: the extension runs there), else on ' +
        'the User tab.',
    );
  });

  test('a Python without hive_rpc gets the same hint', async () => {
    const s = new Sidecar();
    s.spawn({ command: 'sh', args: ['-c', "echo \"/usr/bin/python3: No module named hive_rpc\" >&2; exit 1"] }, {});
    const run = await s.whenEnded(10_000);
    assert.match(failureMessage(run!), /exited with code 1\. Its last output: "\/usr\/bin\/python3: No module named hive_rpc"\. Set Hive: Python Path \(hive\.pythonPath\)/);
  });

  test('killed by a signal; kill() stops a live one', async () => {
    const s = new Sidecar();
    s.spawn({ command: 'sleep', args: ['600'] }, {});
    s.kill();
    const run = await s.whenEnded(10_000);
    assert.deepEqual(run?.exit, { code: null, signal: 'SIGTERM' });
    assert.match(failureMessage(run!, { crashes: 5 }), /^Hive: the sidecar was killed by SIGTERM \(5 times in 3 minutes\) and is not restarted: sleep 600\. It printed nothing on stderr\.$/);
  });

  test('commandLine quotes what needs it', () => {
    assert.equal(commandLine('/a b/python', ['-m', 'hive_rpc', 'lsp', '']), '"/a b/python" -m hive_rpc lsp ""');
  });
});

describe('restart budget', () => {
  test('never restarts a sidecar that did not start; 4 crashes in 3 minutes, not 5', () => {
    let now = 0;
    const s = new Sidecar(undefined, () => now);
    s.spawn({ command: 'true', args: [] }, {});
    assert.equal(s.shouldRestart(), false, 'it never ran');
    s.markRunning();
    for (let i = 0; i < 4; i++) {
      now += 1000;
      assert.equal(s.shouldRestart(), true);
    }
    now += 1000;
    assert.equal(s.shouldRestart(), false);
    assert.equal(s.crashCount, 5);
    now += 4 * 60 * 1000;
    assert.equal(s.shouldRestart(), true, 'old crashes leave the window');
  });
});
