// Types of doc-blocks.mjs, for docs/samples/samples.test.ts.

/** A ```ts block of a guide. */
export interface DocBlock {
  /** The guide, from the repository root: `docs/kv.md`. */
  readonly file: string;
  /** The line of its opening fence (1-based). */
  readonly line: number;
  /** `docs/kv.md:42`. */
  readonly where: string;
  readonly code: string;
  /** Why it is neither compiled nor run (first line `// not compiled: <reason>`), if so. */
  readonly notCompiled?: string;
  /** Why it is compiled but not run (first line `// fragment: <reason>`), if so. */
  readonly fragment?: string;
}

export declare function extractBlocks(file: string, markdown: string): DocBlock[];
export declare function guideFiles(root: string): string[];
export declare function allBlocks(root: string): DocBlock[];
