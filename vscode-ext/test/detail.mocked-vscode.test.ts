/**
 * A prompt's detail (a Claude Code permission's whole tool input): the pure
 * preview and document text (src/promptDetail.ts), and, with the MOCKED
 * `vscode` module (test/vscode-mock.ts), the quick pick that shows it before
 * any answer (src/promptSteps.ts) and the read-only document
 * (src/detailDocuments.ts). tests/vscode/test_vscode_permission_detail.py
 * checks the same in the real VS Code.
 */
import './register-vscode-mock';
import assert from 'node:assert/strict';
import { beforeEach, describe, test } from 'node:test';
import { DETAIL_SCHEME, DetailDocuments } from '../src/detailDocuments';
import { PromptFlow } from '../src/promptFlow';
import {
  askerOf,
  detailDocumentText,
  HUB_LABEL,
  detailPreview,
  PREVIEW_CHARS,
  SHOW_DETAIL_LABEL,
  SHOW_DETAIL_TOOLTIP,
} from '../src/promptDetail';
import { DECLINE_TOOLTIP } from '../src/promptSteps';
import type { PromptRecord } from '../src/protocol';
import { Clock, FakeHub, FakeTimers, record, settle } from './helpers';
import { FakeInputBox, FakeQuickPick, mock, Uri, ViewColumn, workspace } from './vscode-mock';

const INPUT = '{\n  "command": "npm test\\nrm -rf build",\n  "description": "Run the tests"\n}';
const CHOICES = ['allow', 'allow for this session', 'always allow in this project', 'deny'];

describe('promptDetail (pure)', () => {
  test("the hub's own question is named as the hub's, an agent's by its id", () => {
    assert.equal(askerOf({ agent_id: 'hive-rpc' }), HUB_LABEL);
    assert.equal(HUB_LABEL, 'the hub itself (hive-rpc)');
    assert.equal(askerOf({ agent_id: 'deployer' }), 'deployer');
  });

  test('the preview is one line, cut with … past its length, icons and bidi made inert', () => {
    assert.equal(detailPreview(INPUT), '{ "command": "npm test\\nrm -rf build", "description": "Run the tests" }');
    const long = detailPreview(`{"command": "${'x'.repeat(400)}"}`);
    assert.equal(long.length, PREVIEW_CHARS);
    assert.ok(long.endsWith('…'));
    assert.equal(detailPreview('run $(rm) [x](command:y) a\u202eb\u0007c'), 'run $\u200b(rm) [x]\u200b(command:y) a b c');
  });

  test('the document holds who asks what, then the detail exactly as sent', () => {
    const r = { id: 'p1', agent_id: 'claude-code-3f2a9c1d', question: 'wants to run Bash', kind: 'permission' as const, detail: INPUT };
    assert.equal(detailDocumentText(r), `claude-code-3f2a9c1d asks permission (prompt p1):\nwants to run Bash\n\n${INPUT}\n`);
  });
});

interface World {
  hub: FakeHub;
  clock: Clock;
  flow: PromptFlow;
  shown: PromptRecord[];
}

function world(): World {
  mock.reset();
  const hub = new FakeHub();
  const clock = new Clock();
  const shown: PromptRecord[] = [];
  const flow = new PromptFlow(hub, undefined, {
    by: () => 'alice',
    now: clock.now,
    timers: new FakeTimers(),
    showDetail: (r) => shown.push(r),
  });
  return { hub, clock, flow, shown };
}

function permission(w: World, fields: Partial<PromptRecord> = {}): PromptRecord {
  const r = record(w.clock, {
    agent_id: 'claude-code-3f2a9c1d',
    question: 'Claude Code in ~/src/app (session 3f2a) wants to run Bash: npm test rm -rf build (see detail)',
    choices: CHOICES,
    urgent: true,
    kind: 'permission',
    detail: INPUT,
    ...fields,
  });
  w.hub.emit('hive/prompt', r);
  return r;
}

function openPick(): FakeQuickPick {
  const open = mock.open();
  assert.ok(open instanceof FakeQuickPick, `expected an open quick pick, got ${open?.constructor.name}`);
  return open;
}

describe('a prompt with a detail (quick pick)', () => {
  let w: World;
  beforeEach(() => {
    w = world();
  });

  test('a permission says so; "Show details" comes first, its preview under it, and Enter there answers nothing', async () => {
    const r = permission(w);
    const pick = openPick();
    assert.match(pick.title ?? '', /^Agent claude-code-3f2a9c1d asks permission \(urgent\) — /);
    assert.deepEqual(pick.labels(), [SHOW_DETAIL_LABEL, ...CHOICES]);
    const first = pick.items[0] as { detail?: string; alwaysShow?: boolean };
    assert.equal(first.detail, detailPreview(INPUT));
    assert.equal(first.alwaysShow, true);
    assert.deepEqual(
      pick.buttons.map((b) => b.tooltip),
      [SHOW_DETAIL_TOOLTIP, DECLINE_TOOLTIP],
    );
    // Opened: its whole input is shown beside at once (without the keyboard).
    assert.deepEqual(
      w.shown.map((s) => s.id),
      [r.id],
    );
    // Enter on the first (active) item: the detail again, no answer, the pick stays.
    pick.pick(SHOW_DETAIL_LABEL);
    pick.accept();
    await settle();
    assert.deepEqual(
      w.shown.map((s) => s.id),
      [r.id, r.id],
    );
    assert.deepEqual(w.hub.sent('hive/respond'), []);
    assert.equal(mock.open(), pick);
    // The button too.
    pick.press('Show details');
    assert.equal(w.shown.length, 3);
    // Then the answer.
    pick.pick('deny');
    pick.accept();
    await settle();
    assert.deepEqual(w.hub.sent('hive/respond')[0].params, { id: r.id, answer: 'deny', by: 'alice' });
  });

  test('a prompt without a detail has no "Show details"', () => {
    w.hub.emit('hive/prompt', record(w.clock, { choices: ['yes', 'later'] }));
    const pick = openPick();
    assert.deepEqual(pick.labels(), ['yes', 'later']);
    assert.deepEqual(
      pick.buttons.map((b) => b.tooltip),
      [DECLINE_TOOLTIP],
    );
  });

  test('a free-text prompt with a detail has the button', () => {
    const r = record(w.clock, { detail: 'the whole diff' });
    w.hub.emit('hive/prompt', r);
    const box = mock.open();
    assert.ok(box instanceof FakeInputBox);
    box.press('Show details');
    assert.deepEqual(
      w.shown.map((s) => s.id),
      [r.id, r.id],
      'shown as it opened, then by the button',
    );
    assert.deepEqual(w.hub.sent('hive/respond'), []);
  });
});

describe('DetailDocuments', () => {
  test('opens the detail read-only beside, keeping the focus on the quick pick', async () => {
    mock.reset();
    const docs = new DetailDocuments();
    const registration = workspace.registerTextDocumentContentProvider(DETAIL_SCHEME, docs);
    const r = record(new Clock(), { kind: 'permission', detail: INPUT });
    await docs.show(r);
    assert.equal(mock.shownDocuments.length, 1);
    const { document, options } = mock.shownDocuments[0];
    assert.equal(document.uri.scheme, DETAIL_SCHEME);
    assert.ok(document.text.endsWith(`\n\n${INPUT}\n`));
    assert.deepEqual(options, { preview: true, preserveFocus: true, viewColumn: ViewColumn.Beside });
    assert.equal(document.languageId, 'hive-detail', 'a language whose lines wrap');
    registration.dispose();
  });

  test("an Edit request's change opens as a diff, beside, without the keyboard", async () => {
    mock.reset();
    const docs = new DetailDocuments();
    const registration = workspace.registerTextDocumentContentProvider(DETAIL_SCHEME, docs);
    const input = { file_path: '/src/app/main.py', old_string: 'x = 1', new_string: 'x = 2' };
    const r = record(new Clock(), { kind: 'permission', detail: JSON.stringify(input, null, 2) });
    await docs.show(r);
    assert.equal(mock.shownDocuments.length, 0, 'no JSON document');
    const diff = mock.executed.find((e) => e.id === 'vscode.diff');
    assert.ok(diff, 'vscode.diff ran');
    const [before, after, title, options] = diff.args as [Uri, Uri, string, unknown];
    assert.equal(docs.provideTextDocumentContent(before as never), 'x = 1');
    assert.equal(docs.provideTextDocumentContent(after as never), 'x = 2');
    assert.equal(title, 'Edit /src/app/main.py (asked, not applied)');
    assert.deepEqual(options, { preview: true, preserveFocus: true, viewColumn: ViewColumn.Beside });
    registration.dispose();
  });
});
