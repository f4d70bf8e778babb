/**
 * How a prompt is read, and the flat elicitation schema's fields, in order,
 * with parsing and client-side checks of each value. Pure logic, no `vscode`
 * import. The hub checks the answer again (-32004 on a refusal).
 */
import type { PromptRecord, PromptSchema, SchemaProperty } from './protocol';

/** How a prompt is asked. */
export type PromptKind = 'text' | 'choices' | 'boolean' | 'schema';

const YES = /^(yes|y)$/i;
const NO = /^(no|n)$/i;

/** The yes and no choices of a two-choice yes/no prompt, or null. */
export function yesNoChoices(choices: string[] | null): { yes: string; no: string } | null {
  if (!choices || choices.length !== 2) {
    return null;
  }
  const yes = choices.find((c) => YES.test(c.trim()));
  const no = choices.find((c) => NO.test(c.trim()));
  return yes !== undefined && no !== undefined ? { yes, no } : null;
}

/** The name of the only property, if the schema has one boolean field. */
export function singleBooleanField(schema: PromptSchema | null): string | null {
  if (!schema) {
    return null;
  }
  const names = Object.keys(schema.properties ?? {});
  if (names.length === 1 && schema.properties[names[0]].type === 'boolean') {
    return names[0];
  }
  return null;
}

export function promptKind(record: Pick<PromptRecord, 'choices' | 'schema'>): PromptKind {
  if (yesNoChoices(record.choices) || singleBooleanField(record.schema)) {
    return 'boolean';
  }
  if (record.choices && record.choices.length > 0) {
    return 'choices';
  }
  if (record.schema) {
    return 'schema';
  }
  return 'text';
}

/** The answer to a Yes/No prompt: the matching choice, or `{field: bool}`. */
export function booleanAnswer(record: Pick<PromptRecord, 'choices' | 'schema'>, value: boolean): unknown {
  const yn = yesNoChoices(record.choices);
  if (yn) {
    return value ? yn.yes : yn.no;
  }
  const field = singleBooleanField(record.schema);
  if (field !== null) {
    return { [field]: value };
  }
  throw new Error('not a yes/no prompt');
}

export type FieldKind = 'string' | 'number' | 'integer' | 'boolean' | 'enum' | 'multi';

export interface FieldOption {
  label: string;
  value: unknown;
  /** What the option means (a `oneOf`/`anyOf` entry's description). */
  description?: string;
}

export interface Field {
  name: string;
  /** The title if the schema gives one, else the name. */
  label: string;
  description?: string;
  kind: FieldKind;
  required: boolean;
  /** For `enum` and `multi`: the allowed values. */
  options?: FieldOption[];
  /** For `enum` and `multi`: the title of the entry that takes the human's own text, if any. */
  ownText?: string;
  default?: unknown;
  property: SchemaProperty;
}

function optionsOf(
  spec: Pick<SchemaProperty, 'enum' | 'enumNames' | 'oneOf' | 'anyOf'> | undefined,
): FieldOption[] | undefined {
  if (!spec) {
    return undefined;
  }
  if (Array.isArray(spec.enum) && spec.enum.length > 0) {
    return spec.enum.map((value, i) => ({
      value,
      label: spec.enumNames?.[i] ?? String(value),
    }));
  }
  const consts = (spec.oneOf ?? spec.anyOf ?? []).filter((c) => 'const' in c);
  if (consts.length > 0) {
    return consts.map((c) => ({
      value: c.const,
      label: c.title ?? String(c.const),
      ...(c.description ? { description: c.description } : {}),
    }));
  }
  return undefined;
}

/** The title of the free-text entry of an `anyOf` (`{type: 'string'}`, no `const`), if any. */
function ownTextOf(spec: Pick<SchemaProperty, 'anyOf'> | undefined): string | undefined {
  const own = spec?.anyOf?.find((c) => !('const' in c) && c.type === 'string');
  return own ? (own.title ?? 'Other: type your own answer') : undefined;
}

/** The schema's fields, in the order of `properties`. */
export function fieldsOf(schema: PromptSchema): Field[] {
  const required = new Set(schema.required ?? []);
  return Object.entries(schema.properties ?? {}).map(([name, property]) => {
    let kind: FieldKind;
    let options: FieldOption[] | undefined;
    let ownText: string | undefined;
    if (property.type === 'array') {
      kind = 'multi';
      options = optionsOf(property.items);
      ownText = ownTextOf(property.items);
    } else if ((options = optionsOf(property)) !== undefined) {
      kind = 'enum';
      ownText = ownTextOf(property);
    } else {
      kind = property.type;
    }
    return {
      name,
      label: property.title ?? name,
      description: property.description,
      kind,
      required: required.has(name),
      options,
      ...(ownText !== undefined ? { ownText } : {}),
      default: property.default,
      property,
    };
  });
}

export type ParseResult =
  | { ok: true; value: unknown }
  | { ok: true; omit: true }
  | { ok: false; message: string };

/**
 * Parse what was typed for a text-read field (`string`, `number`,
 * `integer`). An optional field left empty is omitted; a required one is not
 * (an empty string stays "", an empty number is refused).
 */
export function parseFieldText(field: Field, text: string): ParseResult {
  const p = field.property;
  if (text.trim() === '' && !field.required) {
    return { ok: true, omit: true };
  }
  if (field.kind === 'integer' || field.kind === 'number') {
    const t = text.trim();
    const isInt = /^[+-]?\d+$/.test(t);
    const n = Number(t);
    if (field.kind === 'integer' ? !isInt : t === '' || !Number.isFinite(n)) {
      return { ok: false, message: `${field.label} wants ${field.kind === 'integer' ? 'an integer' : 'a number'}` };
    }
    if (p.minimum !== undefined && n < p.minimum) {
      return { ok: false, message: `${field.label} must be at least ${p.minimum}` };
    }
    if (p.maximum !== undefined && n > p.maximum) {
      return { ok: false, message: `${field.label} must be at most ${p.maximum}` };
    }
    return { ok: true, value: n };
  }
  const length = [...text].length;
  if (p.minLength !== undefined && length < p.minLength) {
    return { ok: false, message: `${field.label} must be at least ${p.minLength} characters` };
  }
  if (p.maxLength !== undefined && length > p.maxLength) {
    return { ok: false, message: `${field.label} must be at most ${p.maxLength} characters` };
  }
  return { ok: true, value: text };
}

/** Check the number of items picked for a multi-select field. */
export function checkMulti(field: Field, values: unknown[]): string | null {
  const p = field.property;
  if (p.minItems !== undefined && values.length < p.minItems) {
    return `${field.label}: pick at least ${p.minItems}`;
  }
  if (p.maxItems !== undefined && values.length > p.maxItems) {
    return `${field.label}: pick at most ${p.maxItems}`;
  }
  return null;
}

/** The text to start a text field's input box with: a previous value or the default. */
export function initialText(field: Field, previous: unknown): string {
  const v = previous !== undefined ? previous : field.default;
  if (v === undefined || v === null) {
    return '';
  }
  return typeof v === 'string' ? v : JSON.stringify(v);
}
