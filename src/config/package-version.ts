// The package's version, from the nearest package.json above the running file (a checkout's dist/, or node_modules/authd/dist/).

import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** That package.json is ours: it is the one whose "type" makes these files ES modules. */
export function packageVersion(): string | undefined {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    let text: string | undefined;
    try {
      text = readFileSync(join(dir, 'package.json'), 'utf8');
    } catch {
      // none here: look further up
    }
    if (text !== undefined) {
      const version = (JSON.parse(text) as { version?: unknown }).version;
      return typeof version === 'string' ? version : undefined;
    }
    const parent = dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}
