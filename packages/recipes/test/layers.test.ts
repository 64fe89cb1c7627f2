// The recipes' source layers (docs/architecture.md): a module imports only from layers below its
// own, and no import cycle exists, type-only imports included.
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
 * Top to bottom. A unit is a folder of src/ or a file directly in it; '.' stands for the files
 * directly in src/ not named here (errors, recipe-name, wait), which may import each other.
 */
const LAYERS: LayerList = [
  ['index.ts', 'internal.ts'],
  // Service discovery registers through a resilient session.
  ['discovery'],
  // A Leadership is a Hold (lock/hold.ts).
  ['election'],
  ['lock', 'barrier', 'queue', 'counter'],
  // A key's place in a line ordered by create revision: taken, waited for, held, released.
  ['line'],
  ['session'],
  // The STM, and its backoff the resilient session and the registry reuse.
  ['stm'],
  ['.'],
];

const { placed, upwardImports } = layering(LAYERS);

describe('recipes source layers', () => {
  const { files, edges } = sourceImports(SRC);

  it('places every source folder in a layer', () => {
    const unplaced = files.filter((file) => file.includes('/') && !placed(file));
    expect(unplaced).toEqual([]);
  });

  it('keeps at most 6 files directly in src/', () => {
    expect(files.filter((file) => !file.includes('/')).length).toBeLessThanOrEqual(6);
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
      { from: 'line/place.ts', to: 'lock/hold.ts' },
      { from: 'lock/mutex.ts', to: 'queue/queue.ts' },
      { from: 'wait.ts', to: 'session/session.ts' },
      { from: 'line/turn.ts', to: 'line/place.ts' },
      { from: 'line/place.ts', to: 'line/turn.ts' },
    ];
    expect(upwardImports(made)).toEqual([
      'line/place.ts -> lock/hold.ts',
      'lock/mutex.ts -> queue/queue.ts',
      'wait.ts -> session/session.ts',
    ]);
    expect(importCycles(made)).toEqual(['line/place.ts -> line/turn.ts -> line/place.ts']);
  });
});
