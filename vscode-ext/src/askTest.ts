/**
 * "Hive: Ask (test)": the human asks a question themselves, to try the
 * extension out: a question, then choices (comma-separated, empty for free
 * text), sent with `hive/ask` as agent `vscode`.
 */
import * as vscode from 'vscode';
import type { HubClient } from './hubClient';
import { plain } from './plainText';
import { Requests, TEST_AGENT_ID } from './protocol';
import { askParams, errorMessage } from './respond';

/** Ask the two questions, then the hub; `timeoutSeconds` is `hive.timeoutSeconds`. */
export async function askTest(hub: HubClient, timeoutSeconds: number): Promise<void> {
  const question = await vscode.window.showInputBox({
    title: 'Hive: Ask (test)',
    prompt: 'Question',
    ignoreFocusOut: true,
    validateInput: (v) => (v.trim() === '' ? 'Type a question' : undefined),
  });
  if (question === undefined) {
    return;
  }
  const choices = await vscode.window.showInputBox({
    title: 'Hive: Ask (test)',
    prompt: 'Choices (comma-separated, empty for free text)',
    ignoreFocusOut: true,
  });
  if (choices === undefined) {
    return;
  }
  try {
    const record = await hub.sendRequest(Requests.ask, askParams(question, choices, timeoutSeconds, TEST_AGENT_ID));
    void vscode.window.showInformationMessage(`Hive: asked ${record.id}`);
  } catch (err) {
    void vscode.window.showErrorMessage(`Hive: ask failed: ${plain(errorMessage(err))}`);
  }
}
