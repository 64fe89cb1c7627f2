// The shared layers check of the client's and the embedded server's suites: the edges it reads
// from a small fixture tree (type-only imports included), and the exact violations it reports.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  type ImportEdge,
  importCycles,
  layering,
  sourceImports,
  unresolvedImports,
} from '../src/layers.js';

const FIXTURE = join(dirname(fileURLToPath(import.meta.url)), 'fixtures', 'layers-src');

describe('layers', () => {
  it('reads the relative imports of a tree, type-only ones included', () => {
    const found = sourceImports(FIXTURE);
    expect([...found.files].sort()).toEqual([
      'index.ts',
      'low/low.ts',
      'top/peer.ts',
      'top/top.ts',
    ]);
    expect([...found.edges].sort((a, b) => a.from.localeCompare(b.from))).toEqual([
      { from: 'index.ts', to: 'top/top.ts' },
      { from: 'low/low.ts', to: 'top/top.ts' },
      { from: 'top/top.ts', to: 'low/low.ts' },
      { from: 'top/top.ts', to: 'top/peer.ts' },
    ]);
    expect(unresolvedImports(found)).toEqual([]);
    const { upwardImports } = layering([['index.ts'], ['top'], ['low']]);
    expect(upwardImports(found.edges)).toEqual(['low/low.ts -> top/top.ts']);
    // The search starts at index.ts, so the cycle is met from top.ts.
    expect(importCycles(found.edges)).toEqual(['top/top.ts -> low/low.ts -> top/top.ts']);
  });

  it('reports upward and sideways imports, and each cycle once', () => {
    const { unitOf, placed, upwardImports } = layering([
      ['index.ts'],
      ['a', 'b'],
      ['c'],
      ['.'],
      ['c/contract.ts'],
    ]);
    expect(
      ['a/x.ts', 'c/contract.ts', 'c/y.ts', 'util.ts', 'index.ts', 'z/q.ts'].map(unitOf),
    ).toEqual(['a', 'c/contract.ts', 'c', '.', 'index.ts', 'z']);
    expect(placed('z/q.ts')).toBe(false);
    expect(placed('util.ts')).toBe(true);
    const made: ImportEdge[] = [
      { from: 'index.ts', to: 'a/x.ts' },
      { from: 'a/x.ts', to: 'c/y.ts' },
      { from: 'c/y.ts', to: 'a/x.ts' },
      { from: 'a/x.ts', to: 'b/w.ts' },
      { from: 'c/y.ts', to: 'c/contract.ts' },
      { from: 'c/contract.ts', to: 'util.ts' },
      { from: 'util.ts', to: 'errors.ts' },
      { from: 'a/x.ts', to: 'z/q.ts' },
      { from: 'b/w.ts', to: 'b/v.ts' },
      { from: 'b/v.ts', to: 'b/w.ts' },
    ];
    expect(upwardImports(made)).toEqual([
      'c/y.ts -> a/x.ts',
      'a/x.ts -> b/w.ts',
      'c/contract.ts -> util.ts',
      'a/x.ts -> z/q.ts',
    ]);
    expect(importCycles(made)).toEqual([
      'a/x.ts -> c/y.ts -> a/x.ts',
      'b/w.ts -> b/v.ts -> b/w.ts',
    ]);
    expect(
      unresolvedImports({
        files: ['a.ts', 'b.d.ts'],
        edges: [
          { from: 'a.ts', to: 'b.ts' },
          { from: 'a.ts', to: 'c.ts' },
        ],
      }),
    ).toEqual(['a.ts -> c.ts']);
  });
});
