/**
 * The rule a lasting answer to a Claude Code permission saves, in words
 * (`hive-rpc hook claude-code` saves it with `rule/add` after the answer:
 * core/claude_code.py `lasting_rule`), so that the human reads it before it
 * is saved. Pure logic, no `vscode` import.
 */
import { asksPermission, detailOf } from './promptDetail';
import type { PromptRecord } from './protocol';

/** The lasting answers, and the scope of the rule each saves (core/claude_code.py LASTING). */
export const LASTING: Readonly<Record<string, 'session' | 'project'>> = {
  'allow for this session': 'session',
  'always allow in this project': 'project',
};

/** The tool input's field a rule's `(text)` is about, first found wins (core/rules.py _MAIN_ARGUMENT). */
const MAIN_ARGUMENT = ['command', 'file_path', 'path', 'notebook_path', 'url', 'pattern', 'query'];

export interface LastingRule {
  scope: 'session' | 'project';
  /** `Bash(npm test)`, or the tool alone; undefined when it cannot be read from the prompt. */
  pattern?: string;
  /** The project (`~/src/app`) or session (`3f2a`) the question names. */
  where?: string;
}

/** The rule the answer would save, or undefined for an answer that saves none. */
export function lastingRule(record: PromptRecord, answer: unknown): LastingRule | undefined {
  const scope = typeof answer === 'string' ? LASTING[answer] : undefined;
  if (!scope || !asksPermission(record)) {
    return undefined;
  }
  const head = /^Claude Code in (.+?) \(session ([^)]*)\) wants to (?:run|use) ([^:]+):/.exec(record.question);
  const tool = head?.[3];
  let argument: string | undefined;
  try {
    const input: unknown = JSON.parse(detailOf(record) ?? '');
    if (input && typeof input === 'object' && !Array.isArray(input)) {
      const fields = input as Record<string, unknown>;
      const found = MAIN_ARGUMENT.map((f) => fields[f]).find((v) => typeof v === 'string');
      argument = typeof found === 'string' ? found : undefined;
    }
  } catch {
    // a cut or non-JSON detail: the pattern is not known here
  }
  const pattern = tool === undefined ? undefined : argument === undefined ? tool : `${tool}(${argument})`;
  const where = scope === 'project' ? head?.[1] : head?.[2];
  return { scope, pattern, where };
}

/** What the confirmation says the rule does. */
export function lastingRuleText(rule: LastingRule): string {
  const what = rule.pattern ? `allow ${rule.pattern}` : 'allow this exact request';
  const scope =
    rule.scope === 'project'
      ? `every later request in this project${rule.where ? ` (${rule.where})` : ''}`
      : `every later request in this Claude Code session${rule.where ? ` (${rule.where}…)` : ''}`;
  return `This answer saves a rule: ${what}, for ${scope}. Matching requests then run without asking you.`;
}
