/**
 * The schema form walker (src/promptForm.ts) on its own: no `vscode` module,
 * not even the mock. A scripted asker plays the human, step by step, and the
 * tests read what each step offered and the answer the steps make.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { NO_LABEL, readAnswer, SKIP_LABEL, YES_LABEL } from '../src/promptForm';
import type { InputRequest, Outcome, PickRequest, StepAsker, StepResult } from '../src/promptForm';
import type { PromptSchema } from '../src/protocol';
import { Clock, record } from './helpers';

type Step = { kind: 'pick'; request: PickRequest } | { kind: 'input'; request: InputRequest };

/** Plays the human: each step is answered by the next function of the script. */
class ScriptedAsker implements StepAsker {
  readonly steps: Step[] = [];
  constructor(private readonly script: ((step: Step) => StepResult)[]) {}
  private next(step: Step): Promise<StepResult> {
    this.steps.push(step);
    const play = this.script.shift();
    assert.ok(play, `no answer scripted for step ${this.steps.length}`);
    return Promise.resolve(play(step));
  }
  pick(request: PickRequest): Promise<StepResult> {
    return this.next({ kind: 'pick', request });
  }
  input(request: InputRequest): Promise<StepResult> {
    return this.next({ kind: 'input', request });
  }
}

/** Pick the items with these labels (the value the widget returns). */
function picks(...labels: string[]): (step: Step) => StepResult {
  return (step) => {
    assert.equal(step.kind, 'pick');
    const items = (step as { request: PickRequest }).request.items;
    const chosen = labels.map((l) => {
      const item = items.find((i) => i.label === l);
      assert.ok(item, `no item ${l} in ${items.map((i) => i.label).join(', ')}`);
      return item.value;
    });
    return { kind: 'value', value: (step as { request: PickRequest }).request.canSelectMany ? chosen : chosen[0] };
  };
}

/** Type this text, as the input box would take it (parsed by the field). */
function types(text: string): (step: Step) => StepResult {
  return (step) => {
    assert.equal(step.kind, 'input');
    const parse = (step as { request: InputRequest }).request.parse;
    if (!parse) {
      return { kind: 'value', value: text };
    }
    const p = parse(text);
    assert.ok(p.ok, `the field refuses ${JSON.stringify(text)}`);
    return 'omit' in p ? { kind: 'omit' } : { kind: 'value', value: p.value };
  };
}

const clock = new Clock();
const always = (): boolean => true;

async function read(fields: Parameters<typeof record>[1], script: ((step: Step) => StepResult)[], retry = {}) {
  const asker = new ScriptedAsker(script);
  const outcome: Outcome = await readAnswer(record(clock, fields), retry, asker, always);
  return { outcome, steps: asker.steps };
}

describe('promptForm: the steps of a prompt, without vscode', () => {
  test('free text: one input box with the question, starting from a refused answer', async () => {
    const { outcome, steps } = await read({ question: 'Why?' }, [types('because')], {
      message: 'too short',
      lastAnswer: 'bec',
    });
    assert.deepEqual(outcome, { kind: 'answer', answer: 'because' });
    assert.equal(steps.length, 1);
    assert.deepEqual(steps[0], { kind: 'input', request: { prompt: 'Why?', value: 'bec', retryMessage: 'too short' } });
  });

  test('choices: a pick of the choices; yes/no choices: Yes and No, answered with the agent own text', async () => {
    const choices = await read({ choices: ['dev', 'prod'] }, [picks('prod')]);
    assert.deepEqual(choices.outcome, { kind: 'answer', answer: 'prod' });
    assert.deepEqual(
      (choices.steps[0] as { request: PickRequest }).request.items.map((i) => i.label),
      ['dev', 'prod'],
    );
    const yn = await read({ choices: ['Y', 'n'] }, [picks(NO_LABEL)]);
    assert.deepEqual(yn.outcome, { kind: 'answer', answer: 'n' });
    const one = await read({ schema: { type: 'object', properties: { ok: { type: 'boolean' } } } }, [picks(YES_LABEL)]);
    assert.deepEqual(one.outcome, { kind: 'answer', answer: { ok: true } });
  });

  test('schema: one step per field in order, titles by position, optional fields omitted', async () => {
    const schema: PromptSchema = {
      type: 'object',
      properties: {
        env: { type: 'string', title: 'Environment', enum: ['dev', 'prod'], enumNames: ['Development', 'Production'] },
        replicas: { type: 'integer', minimum: 1, default: 2 },
        notify: { type: 'boolean' },
        channels: { type: 'array', items: { enum: ['chat', 'mail'] } },
        note: { type: 'string', description: 'anything else' },
      },
      required: ['env', 'replicas'],
    };
    const { outcome, steps } = await read({ question: 'Deploy how?', schema }, [
      picks('Production'),
      types('3'),
      picks(SKIP_LABEL),
      picks('chat', 'mail'),
      types(''),
    ]);
    assert.deepEqual(outcome, { kind: 'answer', answer: { env: 'prod', replicas: 3, channels: ['chat', 'mail'] } });
    assert.deepEqual(
      steps.map((s) => [s.kind, s.request.stepInfo?.field.name, s.request.stepInfo?.index, s.request.stepInfo?.count]),
      [
        ['pick', 'env', 0, 5],
        ['input', 'replicas', 1, 5],
        ['pick', 'notify', 2, 5],
        ['pick', 'channels', 3, 5],
        ['input', 'note', 4, 5],
      ],
    );
    const env = (steps[0] as { request: PickRequest }).request;
    assert.equal(env.placeholder, 'Deploy how? (Environment)');
    assert.deepEqual(
      env.items.map((i) => [i.label, i.description]),
      [
        ['Development', 'dev'],
        ['Production', 'prod'],
      ],
      'a required enum has no (leave empty)',
    );
    const replicas = (steps[1] as { request: InputRequest }).request;
    assert.equal(replicas.value, '2', 'the default');
    assert.deepEqual(replicas.parse!('0'), { ok: false, message: 'replicas must be at least 1' });
    assert.deepEqual(
      (steps[2] as { request: PickRequest }).request.items.map((i) => i.label),
      [YES_LABEL, NO_LABEL, SKIP_LABEL],
    );
    assert.equal((steps[3] as { request: PickRequest }).request.canSelectMany, true);
    assert.equal((steps[4] as { request: InputRequest }).request.prompt, 'Deploy how? (note, optional) — anything else');
  });

  test('a refused schema answer: the reason on the first field only, the refused values offered again', async () => {
    const schema: PromptSchema = {
      type: 'object',
      properties: { email: { type: 'string' }, name: { type: 'string' } },
      required: ['email', 'name'],
    };
    const { steps } = await read({ schema }, [types('a@b.c'), types('Al')], {
      message: 'not an email',
      lastAnswer: { email: 'ab', name: 'Al' },
    });
    const [first, second] = steps.map((s) => s.request as InputRequest);
    assert.equal(first.retryMessage, 'not an email');
    assert.equal(first.value, 'ab');
    assert.equal(second.retryMessage, undefined);
    assert.equal(second.value, 'Al');
  });

  test('decline, defer or a dismissal in any step ends the prompt so; a prompt closed meanwhile is dismissed', async () => {
    const schema: PromptSchema = {
      type: 'object',
      properties: { a: { type: 'string' }, b: { type: 'string' } },
      required: ['a', 'b'],
    };
    for (const kind of ['decline', 'defer', 'dismissed', 'grace'] as const) {
      const { outcome, steps } = await read({ schema }, [types('x'), () => ({ kind })]);
      assert.deepEqual(outcome, { kind });
      assert.equal(steps.length, 2);
    }
    let pending = true;
    const asker = new ScriptedAsker([
      (s) => {
        pending = false; // answered elsewhere while the first field was open
        return types('x')(s);
      },
    ]);
    const outcome = await readAnswer(record(clock, { schema }), {}, asker, () => pending);
    assert.deepEqual(outcome, { kind: 'dismissed' });
    assert.equal(asker.steps.length, 1);
  });

  test('a multi-select: its count checked; an optional one left empty is omitted', async () => {
    const schema: PromptSchema = {
      type: 'object',
      properties: { tags: { type: 'array', items: { anyOf: [{ const: 'x' }, { const: 'y' }] }, minItems: 1 } },
    };
    const { outcome, steps } = await read({ schema }, [() => ({ kind: 'value', value: [] })]);
    assert.deepEqual(outcome, { kind: 'answer', answer: {} });
    const request = (steps[0] as { request: PickRequest }).request;
    assert.equal(request.validateMany!([]), 'tags: pick at least 1');
    assert.equal(request.validateMany!(['x']), null);
  });

  describe("Claude Code's own questions (core/claude_questions.py)", () => {
    const own = { type: 'string' as const, title: 'Other: type your own answer' };
    const schema: PromptSchema = {
      type: 'object',
      properties: {
        q1: {
          type: 'array',
          title: 'Features',
          description: 'Which features should ship?',
          items: { anyOf: [{ const: 'Alpha', title: 'Alpha', description: 'the first' }, { const: 'Beta', title: 'Beta' }, own] },
          minItems: 1,
        },
        q2: {
          type: 'string',
          title: 'Database',
          anyOf: [
            { const: 'SQLite', title: 'SQLite', description: 'embedded' },
            { const: 'Postgres', title: 'Postgres', description: 'a server' },
            own,
          ],
        },
      },
      required: ['q1', 'q2'],
    };

    test("each option's description is its item's detail, the free entry last", async () => {
      const { outcome, steps } = await read({ schema }, [picks('Alpha', 'Beta'), picks('Postgres')]);
      assert.deepEqual(outcome, { kind: 'answer', answer: { q1: ['Alpha', 'Beta'], q2: 'Postgres' } });
      const [features, database] = steps.map((s) => (s as { request: PickRequest }).request);
      assert.equal(features.canSelectMany, true);
      assert.deepEqual(
        database.items.map((i) => [i.label, i.detail]),
        [
          ['SQLite', 'embedded'],
          ['Postgres', 'a server'],
          ['Other: type your own answer', undefined],
        ],
      );
      assert.deepEqual(
        features.items.map((i) => [i.label, i.detail, i.description]),
        [
          ['Alpha', 'the first', undefined],
          ['Beta', undefined, undefined],
          ['Other: type your own answer', undefined, undefined],
        ],
      );
    });

    test('the free entry asks for your own text, in a pick or among several picks', async () => {
      const { outcome, steps } = await read({ schema }, [
        picks('Beta', 'Other: type your own answer'),
        types('a feature of my own'),
        picks('Other: type your own answer'),
        types('MariaDB, why not?'),
      ]);
      assert.deepEqual(outcome, {
        kind: 'answer',
        answer: { q1: ['Beta', 'a feature of my own'], q2: 'MariaDB, why not?' },
      });
      const input = (steps[3] as { request: InputRequest }).request;
      assert.match(input.prompt, /Database.*your own answer/);
      assert.deepEqual(input.parse!('   '), { ok: false, message: 'Database: type your answer, or Esc to go back to Claude Code' });
    });

    test('Escape in the own-text box defers the whole prompt', async () => {
      const { outcome } = await read({ schema }, [picks('Alpha'), picks('Other: type your own answer'), () => ({ kind: 'defer' })]);
      assert.deepEqual(outcome, { kind: 'defer' });
    });
  });
});
