/**
 * The source-layer check of the client's and the embedded server's test suites: walk a package's
 * src/, read its relative imports (type-only ones included) and find the imports that do not run
 * downward through the package's layer list, and the import cycles. Each package's layers test
 * keeps only its list and its own assertions. Exported as `@etcdkit/testkit/layers` so that only
 * those tests load the TypeScript compiler.
 *
 * @module @etcdkit/testkit/layers
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, posix, relative } from 'node:path';
import ts from 'typescript';

/** An import from one source file to another, both relative to src/ (posix separators). */
export interface ImportEdge {
  readonly from: string;
  readonly to: string;
}

/** A package's source files (relative to src/, posix separators) and their relative imports. */
export interface SourceImports {
  readonly files: readonly string[];
  readonly edges: readonly ImportEdge[];
}

/**
 * Layers top to bottom, each a list of units. A unit is a folder of src/, a file directly in it,
 * or a file inside a folder named with its path (placed apart from the rest of its folder); '.'
 * stands for the files directly in src/ not named, which may import each other.
 */
export type LayerList = readonly (readonly string[])[];

/** The rules a layer list makes. */
export interface Layering {
  /** The unit `file` (relative to src/) belongs to. */
  unitOf(file: string): string;
  /** Whether the unit of `file` is in the layer list. */
  placed(file: string): boolean;
  /**
   * Imports that do not run downward: into a higher layer, or another unit of the same layer;
   * each as `from -> to`, in edge order. An import of an unplaced unit counts as upward.
   */
  upwardImports(edges: readonly ImportEdge[]): string[];
}

/** The rules of `layers` (see {@link LayerList}). */
export function layering(layers: LayerList): Layering {
  const rank = new Map(layers.flatMap((units, at) => units.map((unit) => [unit, at] as const)));
  const unitOf = (file: string): string => {
    if (rank.has(file)) return file;
    const slash = file.indexOf('/');
    return slash >= 0 ? file.slice(0, slash) : '.';
  };
  return {
    unitOf,
    placed: (file) => rank.has(unitOf(file)),
    upwardImports(edges) {
      const found: string[] = [];
      for (const { from, to } of edges) {
        const fromUnit = unitOf(from);
        const toUnit = unitOf(to);
        if (fromUnit === toUnit) continue;
        const below = (rank.get(fromUnit) ?? -1) < (rank.get(toUnit) ?? -1);
        if (!below) found.push(`${from} -> ${to}`);
      }
      return found;
    },
  };
}

/**
 * Every import cycle, each once, as its files `a -> b -> a`, found by a depth-first search from
 * the importing files in sorted order.
 */
export function importCycles(edges: readonly ImportEdge[]): string[] {
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

/**
 * The `.ts` files under `srcDir` and their relative imports, `import type` and `export ... from`
 * included, each target as the `.ts` file a `.js` specifier names.
 */
export function sourceImports(srcDir: string): SourceImports {
  const files = sourceFiles(srcDir).map((path) => relative(srcDir, path).split('\\').join('/'));
  const edges: ImportEdge[] = [];
  for (const file of files) {
    const text = readFileSync(join(srcDir, file), 'utf8');
    for (const { fileName } of ts.preProcessFile(text, true, true).importedFiles) {
      if (!fileName.startsWith('.')) continue;
      const to = posix.normalize(posix.join(posix.dirname(file), fileName)).replace(/\.js$/, '.ts');
      edges.push({ from: file, to });
    }
  }
  return { files, edges };
}

/** Relative imports that name no source file (a `.d.ts` beside the sources counts), as `from -> to`. */
export function unresolvedImports({ files, edges }: SourceImports): string[] {
  const known = new Set(files);
  const dts = (to: string) => to.replace(/\.ts$/, '.d.ts');
  return edges
    .filter(({ to }) => !known.has(to) && !known.has(dts(to)))
    .map(({ from, to }) => `${from} -> ${to}`);
}
