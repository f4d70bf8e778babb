/**
 * Reading one prompt's answer as a form: which steps it takes (an input box or
 * a quick pick each), in order, what each step offers, and how their results
 * make the answer or end the prompt. Pure logic, no `vscode` import: the steps
 * are asked through a `StepAsker`, which src/promptSteps.ts implements with
 * VS Code's widgets and test/promptForm.test.ts with a script.
 *
 * - Yes/No (two yes/no choices, or a schema with one boolean field): a pick of
 *   Yes and No; the answer is the agent's own choice text, or `{FIELD: bool}`;
 * - choices: a pick of the choices;
 * - free text: an input box, starting from a refused answer if there was one;
 * - schema: one step per field, in the schema's order (src/schema.ts); an
 *   optional field left empty is omitted; the answer is one object.
 */
import type { PromptRecord } from './protocol';
import { booleanAnswer, checkMulti, fieldsOf, initialText, parseFieldText, promptKind } from './schema';
import type { Field, FieldOption, ParseResult } from './schema';

/** How one step ended. */
export type StepResult =
  | { kind: 'value'; value: unknown }
  | { kind: 'omit' }
  | { kind: 'defer' }
  | { kind: 'decline' }
  | { kind: 'dismissed' }
  /** A key in the opening moment: given back to the editor (src/promptSteps.ts). */
  | { kind: 'grace' };

/** How a whole prompt ended. */
export type Outcome =
  | { kind: 'answer'; answer: unknown }
  | { kind: 'defer' }
  | { kind: 'decline' }
  | { kind: 'dismissed' }
  /** A key in the opening moment: given back to the editor; asked again at the next pause. */
  | { kind: 'grace' };

/** Which field a schema step reads, and where it is in the form. */
export interface StepInfo {
  field: Field;
  index: number;
  count: number;
}

/** One item of a pick; a single pick's result is the picked item's `value`, a multi pick's the array of them. */
export interface PickItem {
  label: string;
  description?: string;
  /** A line under the label: an option's own description. */
  detail?: string;
  value: unknown;
}

export interface PickRequest {
  items: PickItem[];
  /** The question (and field) shown as the pick's placeholder. */
  placeholder: string;
  /** The hub's reason for refusing the last answer, shown before the placeholder. */
  retryMessage?: string;
  stepInfo?: StepInfo;
  canSelectMany?: boolean;
  /** A multi pick's problem with the values picked, or null: Enter does nothing while there is one. */
  validateMany?: (values: unknown[]) => string | null;
}

export interface InputRequest {
  /** The question (and field) shown under the input line. */
  prompt: string;
  /** The text the box starts with. */
  value: string;
  retryMessage?: string;
  stepInfo?: StepInfo;
  /** A field's parse and check of the text; without it the text is the value. */
  parse?: (text: string) => ParseResult;
}

/** Shows one step and says how it ended. */
export interface StepAsker {
  pick(request: PickRequest): Promise<StepResult>;
  input(request: InputRequest): Promise<StepResult>;
}

export const YES_LABEL = 'Yes';
export const NO_LABEL = 'No';
/** The item of an optional boolean or enum field that leaves it out of the answer. */
export const SKIP_LABEL = '(leave empty)';
/** The value of the SKIP_LABEL item. */
const SKIP = Symbol('skip');
/** The value of a field's free-text item (`Field.ownText`): picking it asks for the text. */
const OWN = Symbol('own text');

/** What the last refused answer left for this asking (queue.ts: retryMessage, lastAnswer). */
export interface Retry {
  message?: string;
  lastAnswer?: unknown;
}

/**
 * Read the answer to `record`, step by step. `stillPending` is asked before
 * each schema field: a prompt closed elsewhere meanwhile ends as `dismissed`.
 */
export async function readAnswer(
  record: PromptRecord,
  retry: Retry,
  ask: StepAsker,
  stillPending: () => boolean,
): Promise<Outcome> {
  const retryMessage = retry.message;
  switch (promptKind(record)) {
    case 'boolean': {
      const r = await ask.pick({
        items: [
          { label: YES_LABEL, value: true },
          { label: NO_LABEL, value: false },
        ],
        placeholder: record.question,
        retryMessage,
      });
      return r.kind === 'value' ? { kind: 'answer', answer: booleanAnswer(record, r.value === true) } : toOutcome(r);
    }
    case 'choices': {
      const r = await ask.pick({
        items: (record.choices ?? []).map((c) => ({ label: c, value: c })),
        placeholder: record.question,
        retryMessage,
      });
      return r.kind === 'value' ? { kind: 'answer', answer: r.value } : toOutcome(r);
    }
    case 'text': {
      const r = await ask.input({
        prompt: record.question,
        value: typeof retry.lastAnswer === 'string' ? retry.lastAnswer : '',
        retryMessage,
      });
      return r.kind === 'value' ? { kind: 'answer', answer: r.value } : toOutcome(r);
    }
    case 'schema':
      return readSchema(record, retry, ask, stillPending);
  }
}

async function readSchema(
  record: PromptRecord,
  retry: Retry,
  ask: StepAsker,
  stillPending: () => boolean,
): Promise<Outcome> {
  const fields = fieldsOf(record.schema!);
  const previous = (
    retry.lastAnswer && typeof retry.lastAnswer === 'object' ? retry.lastAnswer : {}
  ) as Record<string, unknown>;
  const answer: Record<string, unknown> = {};
  for (let i = 0; i < fields.length; i++) {
    if (!stillPending()) {
      return { kind: 'dismissed' };
    }
    const field = fields[i];
    const stepInfo = { field, index: i, count: fields.length };
    // The hub's reason is shown once, on the first field.
    const retryMessage = i === 0 ? retry.message : undefined;
    const r = await readField(record, field, stepInfo, retryMessage, previous[field.name], ask);
    if (r.kind === 'omit') {
      continue;
    }
    if (r.kind !== 'value') {
      return toOutcome(r);
    }
    answer[field.name] = r.value;
  }
  return { kind: 'answer', answer };
}

/** One schema field's step; `omit` for an optional field left empty. */
async function readField(
  record: PromptRecord,
  field: Field,
  stepInfo: StepInfo,
  retryMessage: string | undefined,
  previous: unknown,
  ask: StepAsker,
): Promise<StepResult> {
  const placeholder = fieldPlaceholder(record.question, field);
  switch (field.kind) {
    case 'boolean': {
      const items: PickItem[] = [
        { label: YES_LABEL, value: true },
        { label: NO_LABEL, value: false },
      ];
      if (!field.required) {
        items.push({ label: SKIP_LABEL, value: SKIP });
      }
      const r = await ask.pick({ items, placeholder, retryMessage, stepInfo });
      return r.kind === 'value' && r.value === SKIP ? { kind: 'omit' } : r;
    }
    case 'enum':
    case 'multi': {
      const options: FieldOption[] = field.options ?? [];
      const items: PickItem[] = options.map((o) => ({
        label: o.label,
        description: o.label !== String(o.value) ? String(o.value) : undefined,
        ...(o.description ? { detail: o.description } : {}),
        value: o.value,
      }));
      if (field.ownText !== undefined) {
        items.push({ label: field.ownText, value: OWN });
      }
      if (field.kind === 'enum' && !field.required) {
        items.push({ label: SKIP_LABEL, value: SKIP });
      }
      const r = await ask.pick({
        items,
        placeholder,
        retryMessage,
        stepInfo,
        canSelectMany: field.kind === 'multi',
        validateMany: (values) => checkMulti(field, values),
      });
      if (r.kind === 'value' && field.kind === 'enum' && r.value === SKIP) {
        return { kind: 'omit' };
      }
      if (r.kind === 'value' && field.kind === 'multi' && !field.required && (r.value as unknown[]).length === 0) {
        return { kind: 'omit' };
      }
      return withOwnText(r, field, placeholder, stepInfo, ask);
    }
    default:
      return ask.input({
        prompt: placeholder,
        value: initialText(field, previous),
        retryMessage,
        stepInfo,
        parse: (text) => parseFieldText(field, text),
      });
  }
}

/**
 * A pick's result with the free-text item, if picked, replaced by the human's
 * own text, read in an input box (where every key types); Escape there ends
 * the step as the box says (defer), so the whole prompt stays unanswered.
 */
async function withOwnText(
  r: StepResult,
  field: Field,
  placeholder: string,
  stepInfo: StepInfo,
  ask: StepAsker,
): Promise<StepResult> {
  if (r.kind !== 'value') {
    return r;
  }
  const picked = Array.isArray(r.value) ? r.value : [r.value];
  if (!picked.includes(OWN)) {
    return r;
  }
  const typed = await ask.input({
    prompt: `${placeholder}: your own answer`,
    value: '',
    stepInfo,
    parse: (text) =>
      text.trim() === ''
        ? { ok: false, message: `${field.label}: type your answer, or Esc to go back to Claude Code` }
        : { ok: true, value: text.trim() },
  });
  if (typed.kind !== 'value') {
    return typed;
  }
  if (!Array.isArray(r.value)) {
    return typed;
  }
  return { kind: 'value', value: r.value.map((v) => (v === OWN ? typed.value : v)) };
}

function toOutcome(r: StepResult): Outcome {
  switch (r.kind) {
    case 'defer':
    case 'decline':
    case 'dismissed':
    case 'grace':
      return { kind: r.kind };
    default:
      throw new Error(`unexpected step result ${r.kind}`);
  }
}

/** A field's step text: `QUESTION (FIELD)`, `, optional`, and its description. */
export function fieldPlaceholder(question: string, field: Field): string {
  let text = `${question} (${field.label}${field.required ? '' : ', optional'})`;
  if (field.description) {
    text += ` — ${field.description}`;
  }
  return text;
}
