/**
 * An answer whose effect outlasts the question ("always allow" saves a rule)
 * is sent only after the human read what it does (src/confirmText.ts, the
 * question's own words) and said so: a modal dialog, after the pick. Any
 * other answer passes at once.
 */
import * as vscode from 'vscode';
import { confirmText } from './confirmText';
import { plain } from './plainText';
import type { PromptRecord } from './protocol';

/** The dialog's button that sends the answer. */
export function sendButton(answer: string): string {
  return `Send "${plain(answer)}"`;
}

/** True to send the answer: nothing to confirm, or the human confirmed it. */
export async function confirmAnswer(record: PromptRecord, answer: unknown): Promise<boolean> {
  const says = confirmText(record, answer);
  if (says === undefined) {
    return true;
  }
  const button = sendButton(String(answer));
  const choice = await vscode.window.showWarningMessage(
    plain(says),
    { modal: true, detail: plain(`The request: ${record.question}`) },
    button,
  );
  return choice === button;
}
