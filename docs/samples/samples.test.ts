// The guides' code samples cannot rot, and each one works when pasted into a project: every ```ts
// block of README.md, docs/*.md and the packages' and examples' READMEs is compiled by the
// TypeScript compiler (in memory, with the repository's strict settings and the packages'
// sources), and the test fails with the file, the block's line and the compiler's message.
//
// A block is compiled as a module on its own: it imports what it uses and sets up what it needs (a
// client, a session...). Nothing is declared for it, and no block may declare globals for others.
//
// A ```ts block that cannot compile on purpose (a signature, an outline) says so in the markdown
// itself: its first line is `// not compiled: <reason>`. It is reported as skipped, with the reason.
// Prefer a block that compiles; a block that merely shows text can use another fence (```text).
// Every other block is also run as pasted by `npm run docs:run` (scripts/run-doc-blocks.mjs),
// except a fragment, whose first line is `// fragment: <reason>`: compiled here, not run there.
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { beforeAll, describe, expect, test } from 'vitest';
import { allBlocks, type DocBlock } from '../../scripts/doc-blocks.mjs';

const ROOT = fileURLToPath(new URL('../..', import.meta.url)).replace(/\/$/, '');

type Sample = DocBlock;

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
  const program = ts.createProgram([...files.keys()], options, host);
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

describe('code samples of the guides compile', () => {
  const samples = allBlocks(ROOT);
  let results = new Map<string, string[]>();
  // One program for all blocks: type-checking the packages' sources once takes a while.
  beforeAll(() => {
    results = compile(samples.filter((sample) => sample.notCompiled === undefined));
  }, 120_000);
  test('no block declares globals for the others', () => {
    expect(samples.filter((sample) => /declare\s+global/.test(sample.code))).toEqual([]);
  });
  for (const sample of samples) {
    if (sample.notCompiled !== undefined) {
      test.skip(`${sample.where} (not compiled: ${sample.notCompiled})`, () => {});
      continue;
    }
    test(sample.where, () => {
      expect(results.get(sample.where)).toEqual([]);
    });
  }
});
