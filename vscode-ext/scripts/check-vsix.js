#!/usr/bin/env node
// Check that the packaged .vsix exists and holds what it should: the compiled
// extension, package.json, README, LICENSE and the production dependencies,
// and none of the sources, tests or dev dependencies. A .vsix is a zip file;
// its central directory stores the entry names as plain text.
'use strict';
const fs = require('node:fs');

const path = require('node:path');

// Default: NAME-VERSION.vsix, the name `vsce package` gives it.
const pkg = require(path.join(__dirname, '..', 'package.json'));
const file = process.argv[2] ?? path.join(__dirname, '..', `${pkg.name}-${pkg.version}.vsix`);
if (!file || !fs.existsSync(file)) {
  console.error(`check-vsix: ${file ?? '(no file given)'} does not exist; run "npm run package"`);
  process.exit(1);
}
const buf = fs.readFileSync(file);
// Read the entry names from the zip's central directory (signature PK\1\2).
const names = [];
for (let i = buf.indexOf('PK\x01\x02'); i >= 0; i = buf.indexOf('PK\x01\x02', i + 4)) {
  const nameLength = buf.readUInt16LE(i + 28);
  names.push(buf.toString('utf8', i + 46, i + 46 + nameLength));
}
const must = [
  'extension/package.json',
  'extension/readme.md',
  'extension/LICENSE.txt',
  'extension/out/src/extension.js',
  'extension/out/src/promptFlow.js',
  'extension/node_modules/vscode-languageclient/package.json',
  'extension/node_modules/vscode-jsonrpc/package.json',
];
const mustNot = [
  /^extension\/src\//,
  /^extension\/test\//,
  /^extension\/out\/test\//,
  /^extension\/node_modules\/(typescript|eslint|@vscode\/vsce|@types)\//,
  /\.ts$/,
];
const lower = new Set(names.map((n) => n.toLowerCase()));
const missing = must.filter((m) => !lower.has(m.toLowerCase()));
const extra = names.filter((n) => mustNot.some((re) => re.test(n) && !n.endsWith('.d.ts')));
if (missing.length || extra.length) {
  if (missing.length) console.error(`check-vsix: missing from ${file}:\n  ${missing.join('\n  ')}`);
  if (extra.length) console.error(`check-vsix: should not be in ${file}:\n  ${extra.slice(0, 20).join('\n  ')}`);
  process.exit(1);
}
console.log(`check-vsix: ${file} OK (${names.length} entries, ${buf.length} bytes)`);
