// The client's source layers (docs/architecture.md): a module imports only from layers below its
// own, and no import cycle exists, type-only imports included.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, posix, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const SRC = join(dirname(fileURLToPath(import.meta.url)), '..', 'src');

/**
 * Top to bottom. A unit is a folder of src/, a file directly in it, or a file named with its
 * folder (a folder's contract, below the rest of it); '.' stands for the files directly in src/
 * not named here (bytes, errors, header...), which may import each other.
 */
const LAYERS: readonly (readonly string[])[] = [
  ['index.ts', 'protocol.ts'],
  ['etcd.ts'],
  ['kv', 'lease', 'election', 'cluster'],
  ['watch'],
  ['keys'],
  ['connection'],
  ['transport'],
  ['.'],
  // What errors.ts builds on: the transports' statuses and failures.
  ['transport/types.ts'],
  ['generated'],
];

/** An import from one source file to another, both relative to src/ (posix separators). */
interface Edge {
  readonly from: string;
  readonly to: string;
}

const RANK = new Map(LAYERS.flatMap((units, rank) => units.map((unit) => [unit, rank] as const)));

function unitOf(file: string): string {
  if (RANK.has(file)) return file;
  const slash = file.indexOf('/');
  return slash >= 0 ? file.slice(0, slash) : '.';
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

describe('client source layers', () => {
  const { files, edges } = sourceImports();

  it('places every source folder in a layer', () => {
    const unplaced = files.filter((file) => file.includes('/') && !RANK.has(unitOf(file)));
    expect(unplaced).toEqual([]);
  });

  it('keeps at most 10 files directly in src/', () => {
    expect(files.filter((file) => !file.includes('/')).length).toBeLessThanOrEqual(10);
  });

  it('imports only from lower layers', () => {
    expect(upwardImports(edges)).toEqual([]);
  });

  it('has no import cycle', () => {
    expect(cycles(edges)).toEqual([]);
  });

  it('resolves every relative import to a source file', () => {
    const known = new Set(files);
    const dts = (to: string) => to.replace(/\.ts$/, '.d.ts');
    expect(
      edges
        .filter(({ to }) => !known.has(to) && !known.has(dts(to)))
        .map(({ from, to }) => `${from} -> ${to}`),
    ).toEqual([]);
  });

  it('reports an upward or sideways import, and a cycle', () => {
    const made: Edge[] = [
      { from: 'connection/retry.ts', to: 'watch/hub.ts' },
      { from: 'watch/hub.ts', to: 'kv/kv.ts' },
      { from: 'lease/lease.ts', to: 'election/lock.ts' },
      { from: 'transport/types.ts', to: 'errors.ts' },
      { from: 'kv/kv.ts', to: 'watch/hub.ts' },
      { from: 'watch/hub.ts', to: 'connection/retry.ts' },
      { from: 'bytes.ts', to: 'errors.ts' },
    ];
    expect(upwardImports(made)).toEqual([
      'connection/retry.ts -> watch/hub.ts',
      'watch/hub.ts -> kv/kv.ts',
      'lease/lease.ts -> election/lock.ts',
      'transport/types.ts -> errors.ts',
    ]);
    expect(cycles(made)).toEqual([
      'watch/hub.ts -> kv/kv.ts -> watch/hub.ts',
      'connection/retry.ts -> watch/hub.ts -> connection/retry.ts',
    ]);
  });
});
