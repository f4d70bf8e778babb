/**
 * `request_human_input` as a VS Code language-model tool: what Calva Backseat
 * Driver offers, so an agent in VS Code's chat (Copilot's agent
 * mode, or any extension calling `vscode.lm.invokeTool`) can ask the human.
 *
 * It asks through the hub, like the MCP tool of the same name
 * (hive_rpc/faces/mcp/prompt_tools.py): the question joins the same queue and opens
 * in the same input box or quick pick (after the idle rule), in every editor
 * on that hub, with the same smart timeout (a countdown that stops when the
 * human starts typing). The result is the answer's text, or Calva's
 * sentinel when no answer came (expired, declined, withdrawn, blank).
 * Cancelling the chat request withdraws the question.
 *
 * No confirmation is asked before it runs: the tool only asks you a question,
 * and you can decline it in the box; a "may I ask you?" first would ask twice.
 *
 * `vscode.lm.registerTool` exists since VS Code 1.95; the extension supports
 * 1.91, so the API is looked up at run time and the tool is simply absent
 * where it is missing.
 */
import * as vscode from 'vscode';
import type { HubClient } from './hubClient';
import { ErrorCode, Requests, ServerNotifications } from './protocol';
import type { AskParams, PromptRecord } from './protocol';

/** The tool's name, as contributed in package.json (`languageModelTools`). */
export const TOOL_NAME = 'request_human_input';
/** The asking agent, as the question shows it ("Agent vscode-chat needs input"). */
export const TOOL_AGENT_ID = 'vscode-chat';
/** What the tool returns when nobody answered (Calva's sentinel, as the MCP tool). */
export const NO_ANSWER = ':timeout->what-would-rich-hickey-do';
/** The countdown when the model gives none (the MCP tool's default too). */
export const DEFAULT_TIMEOUT_S = 60;
/** One `hive/await` waits at most this long; then it asks again. */
const AWAIT_CHUNK_S = 3600;
/**
 * How long a call waits for a sidecar that is not running yet (VS Code is
 * starting, or it is being restarted) before it tells the model it cannot ask.
 */
export const CONNECT_WAIT_MS = 30_000;
/**
 * After the sidecar lost its hub (-32014), the longest wait before `hive/await`
 * is sent again: `hive-rpc lsp` reconnects by itself and says so with
 * `hive/connection`, which ends the wait sooner, but a sidecar without a
 * subscription says nothing.
 */
export const HUB_RETRY_MS = 5_000;
/** The error the model gets when there is no sidecar to ask through. */
export const NO_SIDECAR =
  'the Hive sidecar is not running, so the human cannot be asked (see "Hive: Show Sidecar Log" in VS Code)';

/** The tool's input (its inputSchema in package.json). */
export interface HumanInputInput {
  prompt: string;
  options?: string[];
  timeout_s?: number;
}

/** The `hive/ask` parameters for an input, or an error message for the model. */
export function toolAskParams(input: unknown): AskParams | string {
  const i = (input ?? {}) as Partial<Record<keyof HumanInputInput, unknown>>;
  if (typeof i.prompt !== 'string' || i.prompt.trim() === '') {
    return 'prompt must be a non-empty string: the question to ask the human';
  }
  const params: AskParams = { question: i.prompt, agent_id: TOOL_AGENT_ID, timeout_s: DEFAULT_TIMEOUT_S };
  if (i.options !== undefined && i.options !== null) {
    if (!Array.isArray(i.options) || !i.options.every((o) => typeof o === 'string')) {
      return 'options must be a list of strings';
    }
    if (i.options.length > 0) {
      params.choices = i.options;
    }
  }
  if (i.timeout_s !== undefined && i.timeout_s !== null) {
    if (typeof i.timeout_s !== 'number' || !Number.isFinite(i.timeout_s) || i.timeout_s <= 0) {
      return 'timeout_s must be a positive number of seconds';
    }
    params.timeout_s = i.timeout_s;
  }
  return params;
}

/** The text the model gets for a closed prompt: the answer, or the sentinel. */
export function resultText(record: PromptRecord): string {
  const a = record.answer;
  const given = record.status === 'responded' && record.action === 'accept' && typeof a === 'string' && a.trim() !== '';
  return given ? (a as string) : NO_ANSWER;
}

/** What the tool needs from the hub: requests, and to wait for the sidecar. */
export interface ToolHub extends HubClient {
  whenConnected(next?: boolean): Promise<void>;
}

/** vscode-jsonrpc's codes for a request lost with its connection (the sidecar went away). */
const CONNECTION_LOST = new Set([-32097, -32096]);

// The language-model tool API, declared here because @types/vscode 1.91
// (the oldest VS Code the extension supports) does not have it.
interface ToolResult {
  content: unknown[];
}
interface LmApi {
  lm?: {
    registerTool?<T>(name: string, tool: LanguageModelTool<T>): vscode.Disposable;
  };
  LanguageModelToolResult?: new (content: unknown[]) => ToolResult;
  LanguageModelTextPart?: new (value: string) => unknown;
  CancellationError: new () => Error;
}
export interface LanguageModelTool<T> {
  prepareInvocation?(
    options: { input: T },
    token: vscode.CancellationToken,
  ): { invocationMessage?: string } | undefined;
  invoke(options: { input: T }, token: vscode.CancellationToken): Promise<ToolResult>;
}

/**
 * Register the tool if this VS Code has the API; undefined where it does not.
 * `api` is the `vscode` module (tests pass a fake).
 */
export function registerHumanInputTool(
  hub: ToolHub,
  log: (line: string) => void,
  api: LmApi = vscode as unknown as LmApi,
  connectWaitMs: number = CONNECT_WAIT_MS,
): vscode.Disposable | undefined {
  const register = api.lm?.registerTool;
  const Result = api.LanguageModelToolResult;
  const TextPart = api.LanguageModelTextPart;
  if (!register || !Result || !TextPart) {
    log(`this VS Code has no language-model tool API: ${TOOL_NAME} is not offered`);
    return undefined;
  }
  const tool: LanguageModelTool<HumanInputInput> = {
    prepareInvocation: (options) => ({
      invocationMessage: `Asking you: ${typeof options.input?.prompt === 'string' ? options.input.prompt : ''}`,
    }),
    invoke: async (options, token) => {
      const params = toolAskParams(options.input);
      if (typeof params === 'string') {
        // A bad input is the model's mistake: an error tells it what to fix.
        throw new Error(params);
      }
      const text = await askAndWait(hub, params, token, () => new api.CancellationError(), log, connectWaitMs);
      return new Result([new TextPart(text)]);
    },
  };
  try {
    return register.call(api.lm, TOOL_NAME, tool);
  } catch (err) {
    // A tool name is global: another extension (Calva Backseat Driver has a
    // request_human_input too) may hold it. The rest of the extension works.
    log(`${TOOL_NAME} is not offered: ${String(err)}`);
    return undefined;
  }
}

/**
 * Ask, then wait until the prompt is closed (answered here or anywhere,
 * expired, declined, withdrawn). A sidecar restart in between is waited out;
 * the cancellation token withdraws the prompt and ends the call.
 */
async function askAndWait(
  hub: ToolHub,
  params: AskParams,
  token: vscode.CancellationToken,
  cancelled: () => Error,
  log: (line: string) => void,
  connectWaitMs: number,
): Promise<string> {
  if (token.isCancellationRequested) {
    throw cancelled();
  }
  const untilCancelled = new Promise<'cancelled'>((resolve) => {
    const d = token.onCancellationRequested(() => {
      d.dispose();
      resolve('cancelled');
    });
  });
  let timer: ReturnType<typeof setTimeout> | undefined;
  const gaveUp = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), connectWaitMs);
  });
  const first = await Promise.race([hub.whenConnected().then(() => 'connected' as const), untilCancelled, gaveUp]);
  clearTimeout(timer);
  if (first === 'cancelled') {
    throw cancelled();
  }
  if (first === 'timeout') {
    throw new Error(NO_SIDECAR);
  }
  const asked = await hub.sendRequest(Requests.ask, params);
  const id = asked.id;
  log(`${TOOL_NAME}: asked ${id}`);
  let withdrawn = false;
  const onCancel = token.onCancellationRequested(() => {
    withdrawn = true;
    hub.sendRequest(Requests.cancel, { id, agent_id: TOOL_AGENT_ID }).then(
      () => log(`${TOOL_NAME}: withdrew ${id} (the chat request was cancelled)`),
      (err: unknown) => log(`${TOOL_NAME}: withdrawing ${id}: ${String(err)}`),
    );
  });
  try {
    for (;;) {
      let record: PromptRecord;
      try {
        record = await hub.sendRequest(Requests.await, {
          id,
          timeout_s: AWAIT_CHUNK_S,
          agent_id: TOOL_AGENT_ID,
        });
      } catch (err) {
        if (withdrawn) {
          throw cancelled();
        }
        const code = (err as { code?: unknown }).code;
        if (code === ErrorCode.notFound) {
          return NO_ANSWER; // the hub no longer knows it
        }
        if (code === ErrorCode.hubUnreachable) {
          // The sidecar lost its hub and reconnects: the prompt is kept in the hub's
          // store, so wait for the hub (or a new sidecar), then ask after it again.
          log(`${TOOL_NAME}: waiting for ${id} again once the hub is back: ${String(err)}`);
          if ((await hubBack(hub, token)) === 'cancelled') {
            throw cancelled();
          }
          continue;
        }
        if (code !== undefined && !CONNECTION_LOST.has(code as number)) {
          throw err;
        }
        // The sidecar went away (a restart): wait for the next one, then again.
        log(`${TOOL_NAME}: waiting for ${id} again after: ${String(err)}`);
        if ((await Promise.race([hub.whenConnected(true), untilCancelled])) === 'cancelled') {
          throw cancelled();
        }
        continue;
      }
      if (record.status !== 'pending') {
        if (withdrawn) {
          throw cancelled();
        }
        return resultText(record);
      }
    }
  } finally {
    onCancel.dispose();
  }
}

/**
 * Resolves when the sidecar says it has its hub again (`hive/connection`), when a
 * new sidecar starts, or after `HUB_RETRY_MS`, whichever comes first; or, on the
 * token's cancellation, with 'cancelled'. It leaves no listener or timer behind
 * (a timer left running would keep VS Code's extension host busy for nothing).
 */
function hubBack(hub: ToolHub, token: vscode.CancellationToken): Promise<'back' | 'cancelled'> {
  if (token.isCancellationRequested) {
    return Promise.resolve('cancelled');
  }
  return new Promise((resolve) => {
    const listeners: vscode.Disposable[] = [];
    const end = (how: 'back' | 'cancelled'): void => {
      clearTimeout(timer);
      for (const l of listeners.splice(0)) {
        l.dispose();
      }
      resolve(how);
    };
    const timer = setTimeout(() => end('back'), HUB_RETRY_MS);
    listeners.push(
      hub.onNotification(ServerNotifications.connection, (p) => {
        if (p.connected === true) {
          end('back');
        }
      }),
      token.onCancellationRequested(() => end('cancelled')),
    );
    void hub.whenConnected(true).then(() => end('back'));
  });
}
