// The guides' code samples cannot rot: every ```ts block of README.md and docs/*.md is compiled by
// the TypeScript compiler (in memory, with the repository's strict settings and the packages'
// sources), and the test fails with the file, the block's line and the compiler's message.
//
// A block is compiled as a module on its own, so it may `import` what it uses. The names samples
// conventionally use without defining them (`etcd`, `session`, `lock`, `server`...) are declared in
// prelude.d.ts, with their types; a block that defines one itself shadows the declaration.
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { beforeAll, describe, expect, test } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url)).replace(/\/$/, '');
const PRELUDE = fileURLToPath(new URL('./prelude.d.ts', import.meta.url));

interface Sample {
  /** Where the block is: `docs/kv.md:42` (the line of its opening fence). */
  readonly where: string;
  readonly code: string;
}

/** Every ```ts block of a markdown file. */
function extractSamples(file: string, markdown: string): Sample[] {
  const samples: Sample[] = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    if (!/^```(ts|typescript)\s*$/.test(lines[i]?.trim() ?? '')) continue;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && lines[i]?.trim() !== '```'; i++) body.push(lines[i] ?? '');
    samples.push({ where: `${file}:${start + 1}`, code: body.join('\n') });
  }
  return samples;
}

function guides(): string[] {
  const docs = readdirSync(`${ROOT}/docs`).filter((name) => name.endsWith('.md'));
  return ['README.md', ...docs.map((name) => `docs/${name}`)];
}

/** Compiles the samples together (one virtual module each); returns the diagnostics per sample. */
function compile(samples: readonly Sample[]): Map<string, string[]> {
  const config = ts.getParsedCommandLineOfConfigFile(
    `${ROOT}/tsconfig.json`,
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
        throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'));
      },
    },
  );
  if (!config) throw new Error('cannot read tsconfig.json');
  const files = new Map<string, Sample>();
  samples.forEach((sample, i) => {
    // `export {}` makes every block a module, so top-level await and shadowing work.
    files.set(`${ROOT}/docs/samples/__block${i}.ts`, {
      ...sample,
      code: `${sample.code}\nexport {};\n`,
    });
  });
  const options: ts.CompilerOptions = { ...config.options, noEmit: true, noUnusedLocals: false };
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (name, language) => {
    const sample = files.get(name);
    return sample
      ? ts.createSourceFile(name, sample.code, language)
      : getSourceFile(name, language);
  };
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (name) => files.has(name) || fileExists(name);
  const readFile = host.readFile.bind(host);
  host.readFile = (name) => files.get(name)?.code ?? readFile(name);
  const program = ts.createProgram([...files.keys(), PRELUDE], options, host);
  const byWhere = new Map<string, string[]>();
  for (const [name, sample] of files) {
    const diagnostics = ts.getPreEmitDiagnostics(program, program.getSourceFile(name));
    byWhere.set(
      sample.where,
      diagnostics.map((d) => {
        const line =
          d.file && d.start !== undefined
            ? d.file.getLineAndCharacterOfPosition(d.start).line + 1
            : 0;
        return `line ${line} of the block: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
      }),
    );
  }
  return byWhere;
}

// Blocks that did not compile when this test was written (fragments without their declarations,
// signatures written as code, stale API names). They run as `test.fails`: once a block is fixed its
// test fails until it is removed from this list, so the list can only shrink. Do not add to it.
const KNOWN_BROKEN = new Set([
  'docs/elections.md:7',
  'docs/embedded-server.md:158',
  'docs/embedded-server.md:8',
  'docs/guarantees.md:6',
  'docs/kv.md:145',
  'docs/kv.md:168',
  'docs/kv.md:201',
  'docs/kv.md:218',
  'docs/kv.md:275',
  'docs/kv.md:54',
  'docs/kv.md:88',
  'docs/operations.md:160',
  'docs/operations.md:178',
  'docs/operations.md:209',
  'docs/operations.md:238',
  'docs/operations.md:251',
  'docs/operations.md:261',
  'docs/operations.md:273',
  'docs/operations.md:54',
  'docs/stm.md:123',
  'docs/stm.md:144',
  'docs/stm.md:170',
  'docs/stm.md:70',
  'docs/stm.md:95',
  'docs/watch.md:119',
  'docs/watch.md:192',
]);

describe('code samples of the guides compile', () => {
  const samples = guides().flatMap((file) =>
    extractSamples(file, readFileSync(`${ROOT}/${file}`, 'utf8')),
  );
  let results = new Map<string, string[]>();
  // One program for all blocks: type-checking the packages' sources once takes a while.
  beforeAll(() => {
    results = compile(samples);
  }, 120_000);
  for (const sample of samples) {
    const check = KNOWN_BROKEN.has(sample.where) ? test.fails : test;
    check(sample.where, () => {
      expect(results.get(sample.where)).toEqual([]);
    });
  }
});
