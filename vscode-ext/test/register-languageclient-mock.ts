/**
 * Also mock `vscode-languageclient/node` (test/languageclient-mock.ts), for
 * the activation test, BECAUSE the real client needs the real VS Code, which
 * cannot be downloaded or run on this machine. Import before src/extension.
 */
import { options } from './register-vscode-mock';

options.mockLanguageClient = true;
