/**
 * What an answer does beyond its question, in the asker's own words: the
 * question's `confirm` names such choices (a Claude Code permission's
 * "always allow in this project", with the rule `hive-rpc hook claude-code`
 * saves after it), so the human reads it before the answer is sent. The
 * extension keeps no copy of how the hook words rules. Pure logic, no
 * `vscode` import.
 */
import type { PromptRecord } from './protocol';

/** The text to confirm before `answer` is sent, or undefined: nothing to confirm. */
export function confirmText(record: Pick<PromptRecord, 'confirm'>, answer: unknown): string | undefined {
  if (typeof answer !== 'string' || !Array.isArray(record.confirm)) {
    return undefined;
  }
  const entry = record.confirm.find((c) => c.choice === answer && typeof c.text === 'string');
  return entry?.text;
}
