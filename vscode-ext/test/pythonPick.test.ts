/**
 * Which Python `npm test` runs the hub, `hive-rpc lsp` and the CLI with
 * (test/lspHarness.ts): HIVE_PYTHON, else the project's venv, and a `python3`
 * on PATH only when there is no venv and it really runs `hive_rpc lsp`.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pickPython } from './lspHarness';

const VENV = '/repo/.venv/bin/python';
const works = (): null => null;
const noJeepney = (python: string): string =>
  `"${python} -m hive_rpc lsp --help" failed (exit 1): ModuleNotFoundError: No module named 'jeepney'`;

test('HIVE_PYTHON wins, even over a venv', () => {
  assert.deepEqual(pickPython({ HIVE_PYTHON: '/opt/py' }, VENV, () => true, works), {
    python: '/opt/py',
    ok: true,
    why: '',
  });
  const bad = pickPython({ HIVE_PYTHON: '/opt/py' }, VENV, () => true, noJeepney);
  assert.equal(bad.ok, false);
  assert.match(bad.why, /^HIVE_PYTHON: "\/opt\/py -m hive_rpc lsp --help" failed/);
});

test("the project's venv before any python3 on PATH", () => {
  const tried: string[] = [];
  const r = pickPython({}, VENV, (f) => f === VENV, (p) => (tried.push(p), null));
  assert.deepEqual(r, { python: VENV, ok: true, why: '' });
  assert.deepEqual(tried, [VENV], 'python3 is not even tried');
  const broken = pickPython({}, VENV, (f) => f === VENV, noJeepney);
  assert.equal(broken.python, VENV);
  assert.match(broken.why, /the project's venv: .*jeepney.*reinstall it/);
});

test('without a venv, python3 only if it runs hive_rpc lsp; else a message that says what to do', () => {
  assert.deepEqual(pickPython({}, VENV, () => false, works), { python: 'python3', ok: true, why: '' });
  const none = pickPython({}, VENV, () => false, noJeepney);
  assert.equal(none.ok, false);
  assert.match(none.why, /no Python runs hive_rpc: HIVE_PYTHON is not set, \/repo\/\.venv\/bin\/python does not exist/);
  assert.match(none.why, /python3 -m venv \.venv .* or set HIVE_PYTHON$/);
});
