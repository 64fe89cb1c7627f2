// scripts/check-import-cycles.mjs: which specifiers it reads, the circles it reports, and that no
// package's source has a circle (so no layer imports one above it, not even for a type).
import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { findCycles, readSources, relativeSpecifiers } from '../../scripts/check-import-cycles.mjs';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SCRIPT = `${ROOT}scripts/check-import-cycles.mjs`;

const run = (cwd: string, ...args: string[]) =>
  new Promise<{ code: number; stdout: string }>((resolve) => {
    execFile(process.execPath, [SCRIPT, ...args], { cwd }, (error, stdout) =>
      resolve({ code: typeof error?.code === 'number' ? error.code : 0, stdout }),
    );
  });

describe('relativeSpecifiers', () => {
  it('reads imports, type-only imports and re-exports, on one line or several', () => {
    const source = [
      "import { a } from './a.js';",
      "import type { B } from '../b.js';",
      "import c, { d } from './c.js';",
      "import * as e from './e.js';",
      'import {',
      '  f,',
      '  type G,',
      "} from './f.js';",
      "export { h } from './h.js';",
      "export type { I } from './i.js';",
      "export * from './j.js';",
      "export * as k from './k.js';",
      "import './l.js';",
    ].join('\n');
    expect(relativeSpecifiers(source)).toEqual([
      './a.js',
      '../b.js',
      './c.js',
      './e.js',
      './f.js',
      './h.js',
      './i.js',
      './j.js',
      './k.js',
      './l.js',
    ]);
  });

  it('skips packages, and examples inside doc comments', () => {
    const source = [
      "import { EventEmitter } from 'eventemitter3';",
      "import { x } from 'node:fs';",
      '/**',
      ' * @example',
      " * import { y } from './y.js';",
      ' */',
      'const s = "import { z } from \'./z.js\'";',
    ].join('\n');
    expect(relativeSpecifiers(source)).toEqual([]);
  });
});

describe('findCycles', () => {
  it('reports a circle through a type-only import, with the shortest path of each file', () => {
    const sources = new Map([
      ['src/a.ts', "import { b } from './b.js';\nimport { c } from './sub/c.js';"],
      ['src/b.ts', "import type { A } from './a.js';"],
      ['src/sub/c.ts', "export { d } from './d.js';"],
      ['src/sub/d.ts', "import { a } from '../a.js';"],
      ['src/e.ts', "import { a } from './a.js';"],
    ]);
    expect(findCycles(sources)).toEqual([
      {
        files: ['src/a.ts', 'src/b.ts', 'src/sub/c.ts', 'src/sub/d.ts'],
        cycles: [
          ['src/a.ts', 'src/b.ts', 'src/a.ts'],
          ['src/a.ts', 'src/sub/c.ts', 'src/sub/d.ts', 'src/a.ts'],
        ],
      },
    ]);
  });

  it('reports nothing for a tree, and resolves folder indexes and missing files quietly', () => {
    const sources = new Map([
      ['src/index.ts', "export * from './kv';\nexport * from './generated/protocol.js';"],
      ['src/kv/index.ts', "import { v } from '../validate.js';"],
      ['src/validate.ts', "import { e } from './errors.js';"],
      ['src/errors.ts', ''],
    ]);
    expect(findCycles(sources)).toEqual([]);
  });

  it('reports a module that imports itself', () => {
    expect(findCycles(new Map([['src/a.ts', "import { a } from './a.js';"]]))).toEqual([
      { files: ['src/a.ts'], cycles: [['src/a.ts', 'src/a.ts']] },
    ]);
  });
});

// Every package's src/, as `npm run check` reads them: a type-only import back up a layer counts.
const PACKAGES = [
  ...readdirSync(`${ROOT}packages`)
    .filter((name) => existsSync(`${ROOT}packages/${name}/src`))
    .map((name) => `packages/${name}`),
  'testkit',
];

describe('the packages', () => {
  it('are all read', () => {
    expect(PACKAGES).toEqual([
      'packages/cli',
      'packages/client',
      'packages/otel',
      'packages/recipes',
      'packages/server-embedded',
      'packages/verify',
      'testkit',
    ]);
  });

  it.each(PACKAGES)('%s has no import circle', (pkg) => {
    const circles = findCycles(readSources(`${ROOT}${pkg}/src`));
    expect(circles.map((circle) => circle.cycles)).toEqual([]);
  });
});

describe('the script', () => {
  const withTree = async (files: Record<string, string>, body: (dir: string) => Promise<void>) => {
    const dir = await mkdtemp(join(tmpdir(), 'import-circle-'));
    try {
      await mkdir(join(dir, 'src'));
      for (const [name, text] of Object.entries(files))
        await writeFile(join(dir, 'src', name), text);
      await body(dir);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  };

  it('exits 0 on a package without circles, reading its src/', async () => {
    await withTree(
      { 'a.ts': "import { b } from './b.js';\n", 'b.ts': 'export const b = 1;\n' },
      async (dir) => {
        expect(await run(dir, '.')).toEqual({ code: 0, stdout: 'no import circles in src\n' });
      },
    );
  });

  it('exits 1 on a circle, naming its files', async () => {
    await withTree(
      {
        'a.ts': "import type { B } from './b.js';\n",
        'b.ts': "export { a } from './a.js';\n",
        'c.ts': "import { a } from './a.js';\n",
      },
      async (dir) => {
        expect(await run(dir, '.')).toEqual({
          code: 1,
          stdout: [
            'import circle of 2 files in src:',
            '  src/a.ts -> src/b.ts -> src/a.ts',
            '1 import circle(s) in src',
            '',
          ].join('\n'),
        });
      },
    );
  });
});
