/**
 * The `hive.*` settings as VS Code has them now. Read when used, never
 * cached: a change applies to the next question, answer or start without a
 * restart (only the sidecar's command line restarts it: src/config.ts
 * RESTART_SETTINGS).
 */
import * as vscode from 'vscode';
import * as os from 'node:os';
import { readSettings } from './config';
import type { HiveSettings } from './config';
import { openGraceSeconds } from './idle';

export function currentSettings(): HiveSettings {
  const config = vscode.workspace.getConfiguration('hive');
  return readSettings((key) => config.get(key));
}

/** Who answers (`by`): `hive.by`, else the login name, else empty (the hub records "human"). */
export function answeredBy(): string {
  const by = currentSettings().by.trim();
  if (by) {
    return by;
  }
  try {
    return os.userInfo().username || '';
  } catch {
    return '';
  }
}

/** `hive.openGraceSeconds`, off when `hive.idleSeconds` is 0 (src/idle.ts). */
export function currentOpenGrace(): number {
  return openGraceSeconds(
    currentSettings().idleSeconds,
    vscode.workspace.getConfiguration('hive').get('openGraceSeconds'),
  );
}
