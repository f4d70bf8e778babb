/**
 * What the announcement of a waiting question says (src/announcer.ts): who
 * asks what, how many more wait, and its links: the choices themselves when
 * there are few and they can be answered from there, else "Answer", and
 * "Not now". Pure logic, no `vscode` import.
 *
 * A notification's message renders `[label](command:ID?ARGS)` as a link that
 * runs the command; the agent's text is made inert first (`plain`), so only
 * these links are links.
 */
import { plain } from './plainText';
import { askerOf, detailOf, isClaudeQuestion, isPermission } from './promptDetail';
import { Command } from './protocol';
import type { PromptRecord } from './protocol';

/** At most this many choices are offered in the notification itself. */
export const MAX_CHOICE_LINKS = 3;
/** Choices longer than this are answered in the box, not from a link. */
const MAX_CHOICE_CHARS = 40;
/** The question is cut here in the notification; the box and the detail have it all. */
export const ANNOUNCE_QUESTION_CHARS = 300;
export const ANSWER_LINK = 'Answer…';
export const NOT_NOW_LINK = 'Not now';

/** A command link: `[label](command:id?[args])`. */
export function commandLink(label: string, command: string, args: unknown[]): string {
  return `[${label}](command:${command}?${encodeURIComponent(JSON.stringify(args))})`;
}

/**
 * The choices that can be answered from the notification: a plain choices
 * prompt (no schema, no detail, not a permission: what runs must be read in
 * the box first) with at most MAX_CHOICE_LINKS short one-line choices.
 */
export function linkChoices(record: PromptRecord): string[] {
  const choices = record.choices;
  if (
    !Array.isArray(choices) ||
    choices.length === 0 ||
    choices.length > MAX_CHOICE_LINKS ||
    record.schema ||
    isPermission(record) ||
    detailOf(record) !== undefined
  ) {
    return [];
  }
  const ok = choices.every(
    (c) => typeof c === 'string' && c.trim() !== '' && c.length <= MAX_CHOICE_CHARS && !/[[\]()\n\r\\`*_<>]/.test(c),
  );
  return ok ? choices : [];
}

/** The question on one line, cut at ANNOUNCE_QUESTION_CHARS. */
function oneLineQuestion(question: string): string {
  const line = question.replace(/\s+/g, ' ').trim();
  return line.length > ANNOUNCE_QUESTION_CHARS ? `${line.slice(0, ANNOUNCE_QUESTION_CHARS - 1)}…` : line;
}

/** Who asks, with where it runs: `deployer (~/src/app)`. */
export function askerWithOrigin(record: PromptRecord): string {
  const origin = typeof record.origin === 'string' && record.origin.trim() !== '' ? record.origin.trim() : '';
  return origin ? `${askerOf(record)} (${origin})` : askerOf(record);
}

/** The notification's whole message. `more`: how many other questions wait besides. */
export function announceMessage(record: PromptRecord, more: number): string {
  const verb = isPermission(record) && !isClaudeQuestion(record) ? 'asks permission' : 'asks';
  let text = plain(`${askerWithOrigin(record)} ${verb}: ${oneLineQuestion(record.question)}`);
  if (more > 0) {
    text += ` (+${more} more waiting)`;
  }
  const links = linkChoices(record).map((c) => commandLink(c, Command.answerWith, [record.id, c]));
  links.push(commandLink(ANSWER_LINK, Command.answerPrompt, [record.id]));
  links.push(commandLink(NOT_NOW_LINK, Command.deferAll, []));
  return `${text} — ${links.join(' · ')}`;
}
