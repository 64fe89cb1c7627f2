// The source folders' layers (docs/embedded-server.md, "Inside"): a module imports only from
// layers below its own, and no import cycle exists, type-only imports included.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, posix, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const SRC = join(dirname(fileURLToPath(import.meta.url)), '..', 'src');

/**
 * Top to bottom. A unit is a folder of src/, or a file directly in it; '.' stands for the files
 * directly in src/ not named here (bytes, clock, errors, logger...), which may import each other.
 */
const LAYERS: readonly (readonly string[])[] = [
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

/** An import from one source file to another, both relative to src/ (posix separators). */
interface Edge {
  readonly from: string;
  readonly to: string;
}

const RANK = new Map(LAYERS.flatMap((units, rank) => units.map((unit) => [unit, rank] as const)));

function unitOf(file: string): string {
  const slash = file.indexOf('/');
  if (slash >= 0) return file.slice(0, slash);
  return RANK.has(file) ? file : '.';
}

/** Imports that do not run downward: into a higher layer, or another unit of the same layer. */
function upwardImports(edges: readonly Edge[]): string[] {
  const found: string[] = [];
  for (const { from, to } of edges) {
    const fromUnit = unitOf(from);
    const toUnit = unitOf(to);
    if (fromUnit === toUnit) continue;
    if (RANK.get(fromUnit)! >= RANK.get(toUnit)!) found.push(`${from} -> ${to}`);
  }
  return found;
}

/** Every cycle's files, each cycle once, found by a depth-first search. */
function cycles(edges: readonly Edge[]): string[] {
  const next = new Map<string, string[]>();
  for (const { from, to } of edges) next.set(from, [...(next.get(from) ?? []), to]);
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const found: string[] = [];
  const visit = (file: string): void => {
    state.set(file, 'open');
    path.push(file);
    for (const to of next.get(file) ?? []) {
      const seen = state.get(to);
      if (seen === 'open') found.push([...path.slice(path.indexOf(to)), to].join(' -> '));
      else if (seen === undefined) visit(to);
    }
    path.pop();
    state.set(file, 'done');
  };
  for (const file of [...next.keys()].sort()) if (!state.has(file)) visit(file);
  return found;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** The relative imports of src/, `import type` and `export ... from` included. */
function sourceImports(): { files: string[]; edges: Edge[] } {
  const files = sourceFiles(SRC).map((path) => relative(SRC, path).split('\\').join('/'));
  const edges: Edge[] = [];
  for (const file of files) {
    const text = readFileSync(join(SRC, file), 'utf8');
    for (const { fileName } of ts.preProcessFile(text, true, true).importedFiles) {
      if (!fileName.startsWith('.')) continue;
      const to = posix.normalize(posix.join(posix.dirname(file), fileName)).replace(/\.js$/, '.ts');
      edges.push({ from: file, to });
    }
  }
  return { files, edges };
}

describe('server-embedded source layers', () => {
  const { files, edges } = sourceImports();

  it('places every source folder in a layer', () => {
    expect(files.map(unitOf).filter((unit) => !RANK.has(unit))).toEqual([]);
  });

  it('imports only from lower layers', () => {
    expect(upwardImports(edges)).toEqual([]);
  });

  it('has no import cycle', () => {
    expect(cycles(edges)).toEqual([]);
  });

  it('resolves every relative import to a source file', () => {
    const known = new Set(files);
    expect(
      edges.filter(({ to }) => !known.has(to)).map(({ from, to }) => `${from} -> ${to}`),
    ).toEqual([]);
  });

  it('reports an upward or sideways import, and a cycle', () => {
    const made: Edge[] = [
      { from: 'mvcc/store.ts', to: 'kv/txn.ts' },
      { from: 'watch/wire.ts', to: 'maintenance/quota.ts' },
      { from: 'kv/txn.ts', to: 'mvcc/store.ts' },
      { from: 'clock.ts', to: 'errors.ts' },
    ];
    expect(upwardImports(made)).toEqual([
      'mvcc/store.ts -> kv/txn.ts',
      'watch/wire.ts -> maintenance/quota.ts',
    ]);
    expect(cycles(made)).toEqual(['kv/txn.ts -> mvcc/store.ts -> kv/txn.ts']);
  });
});
