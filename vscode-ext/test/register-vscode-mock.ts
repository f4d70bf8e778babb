/**
 * Make `require('vscode')` return the MOCK in test/vscode-mock.ts, BECAUSE
 * VS Code itself cannot be downloaded or run on this machine. Import this
 * module first in every UI test file, before the UI modules. With
 * `options.mockLanguageClient`, `vscode-languageclient/node` (which needs the
 * real VS Code) is replaced by test/languageclient-mock.ts too.
 */
import Module from 'node:module';
import * as path from 'node:path';

const mockPath = path.join(__dirname, 'vscode-mock.js');
const languageClientMockPath = path.join(__dirname, 'languageclient-mock.js');
/** Set by the activation test only: also mock vscode-languageclient/node. */
export const options = { mockLanguageClient: false };
type Resolve = (request: string, ...rest: unknown[]) => string;
const mod = Module as unknown as { _resolveFilename: Resolve };
const original = mod._resolveFilename;
if (!(original as Resolve & { hiveMock?: boolean }).hiveMock) {
  const patched: Resolve & { hiveMock?: boolean } = function (this: unknown, request: string, ...rest: unknown[]) {
    if (request === 'vscode') {
      return mockPath;
    }
    if (request === 'vscode-languageclient/node' && options.mockLanguageClient) {
      return languageClientMockPath;
    }
    return original.call(this, request, ...rest);
  };
  patched.hiveMock = true;
  mod._resolveFilename = patched;
}
