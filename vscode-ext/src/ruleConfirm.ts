/**
 * "Always allow" shows the rule it will save (src/ruleText.ts) and asks before
 * saving it: a modal dialog, after the human picked a lasting answer. Any
 * other answer passes at once.
 */
import * as vscode from 'vscode';
import { plain } from './plainText';
import type { PromptRecord } from './protocol';
import { lastingRule, lastingRuleText } from './ruleText';

export const SAVE_RULE_BUTTON = 'Save the rule and allow';

/** True to send the answer: not a lasting one, or the human confirmed its rule. */
export async function confirmLastingRule(record: PromptRecord, answer: unknown): Promise<boolean> {
  const rule = lastingRule(record, answer);
  if (!rule) {
    return true;
  }
  const choice = await vscode.window.showWarningMessage(
    plain(lastingRuleText(rule)),
    { modal: true, detail: plain(`The request: ${record.question}`) },
    SAVE_RULE_BUTTON,
  );
  return choice === SAVE_RULE_BUTTON;
}
