// Types of check-import-cycles.mjs, for docs/samples/import-cycles.test.ts.

/** A group of files that reach each other through their imports. */
export interface ImportCircle {
  /** The group's files, sorted. */
  readonly files: readonly string[];
  /** For each file, the shortest circle through it (`[a, b, a]`), without repeats. */
  readonly cycles: readonly (readonly string[])[];
}

export declare function relativeSpecifiers(source: string): string[];
export declare function findCycles(sources: ReadonlyMap<string, string>): ImportCircle[];
export declare function readSources(
  dir: string,
  sources?: Map<string, string>,
): Map<string, string>;
