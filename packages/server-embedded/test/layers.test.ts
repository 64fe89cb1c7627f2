// The source folders' layers (docs/embedded-server.md, "Inside"): a module imports only from
// layers below its own, and no import cycle exists, type-only imports included.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  type ImportEdge,
  importCycles,
  type LayerList,
  layering,
  sourceImports,
  unresolvedImports,
} from '@etcdkit/testkit/layers';
import { describe, expect, it } from 'vitest';

const SRC = join(dirname(fileURLToPath(import.meta.url)), '..', 'src');

/**
 * Top to bottom. A unit is a folder of src/, or a file directly in it; '.' stands for the files
 * directly in src/ not named here (bytes, clock, errors, logger...), which may import each other.
 */
const LAYERS: LayerList = [
  ['index.ts'],
  ['cli'],
  ['cluster'],
  ['embedded-etcd.ts'],
  ['member'],
  ['net'],
  ['faults'],
  ['services'],
  ['concurrency'],
  ['persistence'],
  ['watch', 'maintenance'],
  ['lease'],
  ['kv'],
  ['auth'],
  ['consensus'],
  ['api'],
  ['mvcc'],
  ['.'],
];

const { placed, upwardImports } = layering(LAYERS);

describe('server-embedded source layers', () => {
  const { files, edges } = sourceImports(SRC);

  it('places every source folder in a layer', () => {
    expect(files.filter((file) => !placed(file))).toEqual([]);
  });

  it('imports only from lower layers', () => {
    expect(upwardImports(edges)).toEqual([]);
  });

  it('has no import cycle', () => {
    expect(importCycles(edges)).toEqual([]);
  });

  it('resolves every relative import to a source file', () => {
    expect(unresolvedImports({ files, edges })).toEqual([]);
  });

  it('reports an upward or sideways import, and a cycle', () => {
    const made: ImportEdge[] = [
      { from: 'mvcc/store.ts', to: 'kv/txn.ts' },
      { from: 'watch/wire.ts', to: 'maintenance/quota.ts' },
      { from: 'kv/txn.ts', to: 'mvcc/store.ts' },
      { from: 'clock.ts', to: 'errors.ts' },
    ];
    expect(upwardImports(made)).toEqual([
      'mvcc/store.ts -> kv/txn.ts',
      'watch/wire.ts -> maintenance/quota.ts',
    ]);
    expect(importCycles(made)).toEqual(['kv/txn.ts -> mvcc/store.ts -> kv/txn.ts']);
  });
});
