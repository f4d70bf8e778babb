/**
 * src/protocol.ts against the hub's own method table, read from the REAL
 * Python package (`hive-rpc methods --json`, the table dumped without a hub),
 * run with the interpreter the real-lsp tests use (test/lspHarness.ts:
 * HIVE_PYTHON, else the project's venv). Every request and notification the
 * extension sends must exist there, each param it may send must be one the hub
 * declares, with the same JSON type, and each param the hub requires must be
 * one the extension's params type has. Renaming a method or a param on the
 * hub's side fails here, not in a user's editor. (The notifications the hub
 * sends are not in its table; test/protocol.lsp.test.ts receives them.)
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, test } from 'node:test';
import { RequestType0 } from 'vscode-jsonrpc';
import { AttentionRequests, ClientNotifications, Requests } from '../src/protocol';
import type { JsonType } from '../src/protocol';
import { baseEnv, PYTHON, skip } from './lspHarness';

/** `hive-rpc methods --json`: `{version, methods: [{name, params: {NAME: {type, required}}, notification_ok, ...}]}`. */
interface MethodsJson {
  methods: {
    name: string;
    params: Record<string, { type: string; required: boolean }>;
    notification_ok: boolean;
  }[];
}
type HubTable = Map<string, MethodsJson['methods'][number]>;

function parseTable(json: MethodsJson): HubTable {
  return new Map(json.methods.map((m) => [m.name, m]));
}

function readTable(): HubTable {
  const r = spawnSync(PYTHON, ['-m', 'hive_rpc', 'methods', '--json'], {
    env: baseEnv,
    encoding: 'utf8',
    timeout: 30_000,
  });
  assert.equal(r.status, 0, `${PYTHON} -m hive_rpc methods --json failed (exit ${r.status}): ${r.stderr || r.error}`);
  return parseTable(JSON.parse(r.stdout) as MethodsJson);
}

/** Whether a param the extension declares with `mine` fits the hub's declared type. */
function fits(mine: JsonType, hub: string): boolean {
  return hub === 'any' || mine === hub;
}

/** The params an extension message declares (none for a RequestType0). */
function declared(type: object): Record<string, JsonType> {
  return type instanceof RequestType0 ? {} : ((type as { paramTypes: Record<string, JsonType> }).paramTypes ?? {});
}

describe("src/protocol.ts against the hub's method table", { skip }, () => {
  const table = skip ? undefined : readTable();

  test('every request the extension sends is a hub method, with params the hub declares', () => {
    assert.ok(table && table.size > 0, 'the table lists methods');
    for (const type of [...Object.values(Requests), ...Object.values(AttentionRequests)]) {
      const hub = table.get(type.method);
      assert.ok(hub, `${type.method} is not in the hub's table (${[...table.keys()].join(', ')})`);
      const mine = declared(type);
      for (const [name, jsonType] of Object.entries(mine)) {
        const p = hub.params[name];
        assert.ok(p, `${type.method}: the hub does not declare the param ${name} (it has ${Object.keys(hub.params).join(', ')})`);
        assert.ok(fits(jsonType, p.type), `${type.method}.${name}: the extension sends ${jsonType}, the hub wants ${p.type}`);
      }
      for (const [name, p] of Object.entries(hub.params)) {
        if (p.required) {
          assert.ok(name in mine, `${type.method}: the hub requires ${name}, which the extension's params type lacks`);
        }
      }
    }
  });

  test('every notification the extension sends is a hub method it takes as a notification', () => {
    assert.ok(table);
    for (const type of Object.values(ClientNotifications)) {
      const hub = table.get(type.method);
      assert.ok(hub, `${type.method} is not in the hub's table`);
      assert.equal(hub.notification_ok, true, `the hub does not take ${type.method} as a notification`);
      for (const [name, jsonType] of Object.entries(type.paramTypes)) {
        const p = hub.params[name];
        assert.ok(p && fits(jsonType, p.type), `${type.method}: the hub does not declare ${name} as ${jsonType}`);
      }
    }
  });

  test('the check itself: a param or method the hub lacks is caught', () => {
    const fake = parseTable({
      methods: [{ name: 'hive/ask', params: { question: { type: 'string', required: true } }, notification_ok: false }],
    });
    assert.equal('choices' in fake.get('hive/ask')!.params, false);
    assert.equal(fake.has('hive/respond'), false);
    assert.equal(fits('string', 'any'), true);
    assert.equal(fits('number', 'string'), false);
  });
});
