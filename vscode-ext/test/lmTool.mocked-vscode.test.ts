/**
 * src/lmTool.ts's logic with the `vscode` module MOCKED and a fake language
 * model API: input checks, what it asks the hub, the answer or the sentinel,
 * cancellation withdrawing the question, a sidecar restart and a hub lost behind
 * the sidecar (-32014) waited out, and no tool where the API is missing.
 * tests/vscode/test_vscode_lm_tool.py invokes the registered tool in a real editor.
 */
import './register-vscode-mock';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { SwitchableHubClient } from '../src/hubClient';
import {
  DEFAULT_TIMEOUT_S,
  NO_ANSWER,
  NO_SIDECAR,
  registerHumanInputTool,
  resultText,
  TOOL_AGENT_ID,
  TOOL_NAME,
  toolAskParams,
} from '../src/lmTool';
import type { HumanInputInput, LanguageModelTool } from '../src/lmTool';
import { ErrorCode } from '../src/protocol';
import { Clock, FakeHub, record, rpcError, settle } from './helpers';
import { EventEmitter } from './vscode-mock';

class CancelledError extends Error {}

/** A fake `vscode` with the language-model API; keeps what was registered. */
function fakeApi() {
  const registered = new Map<string, LanguageModelTool<HumanInputInput>>();
  const api = {
    lm: {
      registerTool<T>(name: string, tool: LanguageModelTool<T>) {
        registered.set(name, tool as unknown as LanguageModelTool<HumanInputInput>);
        return { dispose: () => registered.delete(name) };
      },
    },
    LanguageModelToolResult: class {
      constructor(public content: unknown[]) {}
    },
    LanguageModelTextPart: class {
      constructor(public value: string) {}
    },
    CancellationError: CancelledError,
  };
  return { api, registered };
}

function tokenSource() {
  const emitter = new EventEmitter<void>();
  const token = { isCancellationRequested: false, onCancellationRequested: emitter.event };
  return {
    token,
    cancel() {
      token.isCancellationRequested = true;
      emitter.fire();
    },
  };
}

/** A hub whose hive/await answers when the test says so. */
function world() {
  const clock = new Clock();
  const fake = new FakeHub();
  const hub = new SwitchableHubClient();
  hub.setTarget(fake);
  const asked = record(clock, { agent_id: TOOL_AGENT_ID, question: 'Which port?' });
  let closeWith: ((r: unknown) => void) | undefined;
  let failWith: ((e: unknown) => void) | undefined;
  fake.server = (method, params) => {
    if (method === 'hive/ask') {
      return { ...asked, ...(params as object) };
    }
    if (method === 'hive/await') {
      return new Promise((resolve, reject) => {
        closeWith = resolve;
        failWith = reject;
      });
    }
    if (method === 'hive/cancel') {
      closeWith?.({ ...asked, status: 'cancelled', by: TOOL_AGENT_ID });
      return { ...asked, status: 'cancelled' };
    }
    return null;
  };
  return {
    fake,
    hub,
    asked,
    close: (fields: object) => closeWith?.({ ...asked, ...fields }),
    fail: (err: unknown) => failWith?.(err),
  };
}

const texts = (result: unknown): string[] =>
  (result as { content: { value: string }[] }).content.map((p) => p.value);

describe('request_human_input (language-model tool)', () => {
  test('input checks and the hive/ask parameters', () => {
    assert.deepEqual(toolAskParams({ prompt: 'Which port?' }), {
      question: 'Which port?',
      agent_id: TOOL_AGENT_ID,
      timeout_s: DEFAULT_TIMEOUT_S,
    });
    assert.deepEqual(toolAskParams({ prompt: 'Deploy?', options: ['yes', 'no'], timeout_s: 300 }), {
      question: 'Deploy?',
      agent_id: TOOL_AGENT_ID,
      timeout_s: 300,
      choices: ['yes', 'no'],
    });
    assert.match(String(toolAskParams({ prompt: '  ' })), /prompt must be a non-empty string/);
    assert.match(String(toolAskParams({})), /prompt must be/);
    assert.match(String(toolAskParams({ prompt: 'x', options: [1] })), /options must be a list of strings/);
    assert.match(String(toolAskParams({ prompt: 'x', timeout_s: 0 })), /timeout_s must be a positive/);
  });

  test('the answer, or the sentinel for anything else', () => {
    const clock = new Clock();
    const r = (f: object) => resultText(record(clock, f));
    assert.equal(r({ status: 'responded', action: 'accept', answer: '8080' }), '8080');
    assert.equal(r({ status: 'responded', action: 'accept', answer: '  ' }), NO_ANSWER);
    assert.equal(r({ status: 'responded', action: 'decline', answer: null }), NO_ANSWER);
    assert.equal(r({ status: 'expired', expired: true }), NO_ANSWER);
    assert.equal(r({ status: 'cancelled' }), NO_ANSWER);
  });

  test('invoke asks the hub, waits, and returns the answer as text', async () => {
    const { api, registered } = fakeApi();
    const w = world();
    const reg = registerHumanInputTool(w.hub, () => undefined, api);
    assert.ok(reg);
    const tool = registered.get(TOOL_NAME)!;
    assert.deepEqual(tool.prepareInvocation?.({ input: { prompt: 'Which port?' } }, tokenSource().token), {
      invocationMessage: 'Asking you: Which port?',
    });
    const pending = tool.invoke({ input: { prompt: 'Which port?' } }, tokenSource().token);
    await settle();
    assert.deepEqual(w.fake.requests.map((r) => r.method), ['hive/ask', 'hive/await']);
    assert.deepEqual(w.fake.requests[1].params, { id: w.asked.id, timeout_s: 3600, agent_id: TOOL_AGENT_ID });
    w.close({ status: 'responded', action: 'accept', answer: '8080' });
    assert.deepEqual(texts(await pending), ['8080']);
    reg.dispose();
    assert.equal(registered.size, 0);
  });

  test('a still-pending await (its own timeout) waits again', async () => {
    const { api, registered } = fakeApi();
    const w = world();
    registerHumanInputTool(w.hub, () => undefined, api);
    const pending = registered.get(TOOL_NAME)!.invoke({ input: { prompt: 'Q?' } }, tokenSource().token);
    await settle();
    w.close({ status: 'pending' });
    await settle();
    assert.equal(w.fake.sent('hive/await').length, 2);
    w.close({ status: 'expired', expired: true });
    assert.deepEqual(texts(await pending), [NO_ANSWER]);
  });

  test('cancelling the chat request withdraws the question', async () => {
    const { api, registered } = fakeApi();
    const w = world();
    registerHumanInputTool(w.hub, () => undefined, api);
    const source = tokenSource();
    const pending = registered.get(TOOL_NAME)!.invoke({ input: { prompt: 'Q?' } }, source.token);
    await settle();
    source.cancel();
    await assert.rejects(pending, CancelledError);
    assert.deepEqual(w.fake.sent('hive/cancel')[0].params, { id: w.asked.id, agent_id: TOOL_AGENT_ID });
  });

  test('a bad input is an error for the model; nothing is asked', async () => {
    const { api, registered } = fakeApi();
    const w = world();
    registerHumanInputTool(w.hub, () => undefined, api);
    await assert.rejects(
      registered.get(TOOL_NAME)!.invoke({ input: { prompt: '' } }, tokenSource().token),
      /prompt must be a non-empty string/,
    );
    assert.equal(w.fake.requests.length, 0);
  });

  test('a sidecar restart while waiting is waited out', async () => {
    const { api, registered } = fakeApi();
    const w = world();
    registerHumanInputTool(w.hub, () => undefined, api);
    const pending = registered.get(TOOL_NAME)!.invoke({ input: { prompt: 'Q?' } }, tokenSource().token);
    await settle();
    w.fail(Object.assign(new Error('Pending response rejected since connection got disposed'), { code: -32097 }));
    w.hub.setTarget(undefined);
    await settle();
    assert.equal(w.fake.sent('hive/await').length, 1, 'no new request without a sidecar');
    w.hub.setTarget(w.fake);
    await settle();
    assert.equal(w.fake.sent('hive/await').length, 2);
    w.close({ status: 'responded', action: 'accept', answer: 'after restart' });
    assert.deepEqual(texts(await pending), ['after restart']);
  });

  test('a hub lost behind the sidecar (-32014) is waited out, not an error', async () => {
    const { api, registered } = fakeApi();
    const w = world();
    const lines: string[] = [];
    registerHumanInputTool(w.hub, (l) => lines.push(l), api);
    const pending = registered.get(TOOL_NAME)!.invoke({ input: { prompt: 'Q?' } }, tokenSource().token);
    await settle();
    w.fail(rpcError(ErrorCode.hubUnreachable, 'lost the hub: connection closed'));
    await settle();
    assert.equal(w.fake.sent('hive/await').length, 1, 'not sent again while the hub is away');
    w.fake.emit('hive/connection', { connected: false, message: 'lost the hub; retrying in 1s' });
    await settle();
    assert.equal(w.fake.sent('hive/await').length, 1);
    w.fake.emit('hive/connection', { connected: true, message: '' });
    await settle();
    assert.equal(w.fake.sent('hive/await').length, 2, 'asked again once the hub is back');
    w.close({ status: 'responded', action: 'accept', answer: 'after the hub came back' });
    assert.deepEqual(texts(await pending), ['after the hub came back']);
    assert.ok(lines.some((l) => l.includes(`waiting for ${w.asked.id} again once the hub is back`)), lines.join('\n'));
  });

  test('cancelling while the hub is away withdraws the question', async () => {
    const { api, registered } = fakeApi();
    const w = world();
    registerHumanInputTool(w.hub, () => undefined, api);
    const source = tokenSource();
    const pending = registered.get(TOOL_NAME)!.invoke({ input: { prompt: 'Q?' } }, source.token);
    await settle();
    w.fail(rpcError(ErrorCode.hubUnreachable, 'lost the hub'));
    await settle();
    source.cancel();
    await assert.rejects(pending, CancelledError);
    assert.deepEqual(w.fake.sent('hive/cancel')[0].params, { id: w.asked.id, agent_id: TOOL_AGENT_ID });
  });

  test('another error of the hub still fails the call', async () => {
    const { api, registered } = fakeApi();
    const w = world();
    registerHumanInputTool(w.hub, () => undefined, api);
    const pending = registered.get(TOOL_NAME)!.invoke({ input: { prompt: 'Q?' } }, tokenSource().token);
    await settle();
    w.fail(rpcError(ErrorCode.internal, 'boom'));
    await assert.rejects(pending, /boom/);
  });

  test('a name another extension holds: not offered, and activation goes on', () => {
    const lines: string[] = [];
    const { api } = fakeApi();
    api.lm.registerTool = () => {
      throw new Error('Tool "request_human_input" already has an implementation.');
    };
    assert.equal(registerHumanInputTool(world().hub, (l) => lines.push(l), api), undefined);
    assert.match(lines[0], /request_human_input is not offered: Error: Tool "request_human_input" already has/);
  });

  test('no sidecar to ask through: the model is told so, nothing waits forever', async () => {
    const { api, registered } = fakeApi();
    const hub = new SwitchableHubClient(); // no sidecar running
    registerHumanInputTool(hub, () => undefined, api, 20);
    await assert.rejects(
      registered.get(TOOL_NAME)!.invoke({ input: { prompt: 'Q?' } }, tokenSource().token),
      (err: Error) => err.message === NO_SIDECAR,
    );
  });

  test('a sidecar that comes up in time is used', async () => {
    const { api, registered } = fakeApi();
    const w = world();
    w.hub.setTarget(undefined);
    registerHumanInputTool(w.hub, () => undefined, api);
    const pending = registered.get(TOOL_NAME)!.invoke({ input: { prompt: 'Q?' } }, tokenSource().token);
    await settle();
    assert.equal(w.fake.requests.length, 0);
    w.hub.setTarget(w.fake);
    await settle();
    w.close({ status: 'responded', action: 'accept', answer: 'late but fine' });
    assert.deepEqual(texts(await pending), ['late but fine']);
  });

  test('no tool where VS Code has no language-model API', () => {
    const lines: string[] = [];
    const w = world();
    assert.equal(registerHumanInputTool(w.hub, (l) => lines.push(l), { CancellationError: CancelledError }), undefined);
    assert.match(lines[0], /no language-model tool API/);
  });
});
