// The package's version, read from its package.json, which sits one or two levels above this
// module whether it runs from source (src/cli/) or from the build (dist/).
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const PACKAGE_NAME = '@etcdkit/server-embedded';

/** The version of @etcdkit/server-embedded, or `unknown` if its package.json is not found. */
export function packageVersion(from: string = import.meta.url): string {
  let dir = dirname(fileURLToPath(from));
  for (let level = 0; level < 4; level++) {
    try {
      const manifest: unknown = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
      if (isManifest(manifest) && manifest.name === PACKAGE_NAME) return manifest.version;
    } catch {
      // No package.json here: look one level up.
    }
    dir = dirname(dir);
  }
  return 'unknown';
}

function isManifest(value: unknown): value is { name: string; version: string } {
  return (
    typeof value === 'object' &&
    value !== null &&
    'name' in value &&
    'version' in value &&
    typeof value.version === 'string'
  );
}
