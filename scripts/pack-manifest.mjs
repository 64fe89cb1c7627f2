// The published package.json, made at pack time (the packages' prepack and postpack scripts):
// `strip` drops the `etcdkit-source` condition from the exports map, which points at ./src/*.ts for
// running this repository's sources (`node --conditions=etcdkit-source`) and is not in the tarball;
// `restore` puts the repository's package.json back. Run in a package's directory.
//
//   node ../../scripts/pack-manifest.mjs strip|restore
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';

export const SOURCE_CONDITION = 'etcdkit-source';
const MANIFEST = 'package.json';
// Outside the package's `files`, so never packed itself.
const KEPT = 'package.json.repository';

/** The exports map without the source condition, at any depth. */
export function withoutSourceCondition(exports) {
  if (exports === null || typeof exports !== 'object') return exports;
  if (Array.isArray(exports)) return exports.map(withoutSourceCondition);
  return Object.fromEntries(
    Object.entries(exports)
      .filter(([key]) => key !== SOURCE_CONDITION)
      .map(([key, value]) => [key, withoutSourceCondition(value)]),
  );
}

function strip() {
  // A pack that failed before its postpack left the repository's manifest aside: start from it.
  if (existsSync(KEPT)) renameSync(KEPT, MANIFEST);
  const text = readFileSync(MANIFEST, 'utf8');
  const manifest = JSON.parse(text);
  writeFileSync(KEPT, text);
  manifest.exports = withoutSourceCondition(manifest.exports);
  writeFileSync(MANIFEST, `${JSON.stringify(manifest, null, 2)}\n`);
}

function restore() {
  if (existsSync(KEPT)) renameSync(KEPT, MANIFEST);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const command = process.argv[2];
  if (command === 'strip') strip();
  else if (command === 'restore') restore();
  else {
    console.error('usage: node pack-manifest.mjs strip|restore');
    process.exit(2);
  }
}
