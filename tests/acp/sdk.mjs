// The ACP SDK installed by scripts/install-acp-sdk.sh, loaded from the directory the
// test names in HIVE_ACP_SDK_DIR (ES modules do not read NODE_PATH).
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import { join } from "node:path";

export async function loadSdk() {
  const dir = process.env.HIVE_ACP_SDK_DIR;
  if (!dir) throw new Error("HIVE_ACP_SDK_DIR is not set");
  const require = createRequire(join(dir, "package.json"));
  return import(pathToFileURL(require.resolve("@agentclientprotocol/sdk")).href);
}
