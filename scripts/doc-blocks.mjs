// The ```ts blocks of the guides, read one way by the two checks that use them: the compile test
// (docs/samples/samples.test.ts) and the runner (scripts/run-doc-blocks.mjs).
//
// A block's first line may say what it is:
//   // not compiled: <reason>   neither compiled nor run (a signature, an outline)
//   // fragment: <reason>       compiled, not run (part of a program, or needs what CI cannot
//                               have, such as a real 3-member cluster)
// Every other block is a complete program: compiled, and run as pasted.
import { existsSync, readdirSync, readFileSync } from 'node:fs';

const NOT_COMPILED = /^\s*\/\/\s*not compiled:\s*(\S.*)$/;
const FRAGMENT = /^\s*\/\/\s*fragment:\s*(\S.*)$/;

/** Every ```ts block of a markdown file (`file` is its path from the repository root). */
export function extractBlocks(file, markdown) {
  const blocks = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    if (!/^```(ts|typescript)\s*$/.test(lines[i]?.trim() ?? '')) continue;
    const line = i + 1;
    // An indented fence (in a list item) indents its body as much: strip that, as markdown does.
    const indent = /^\s*/.exec(lines[i] ?? '')?.[0].length ?? 0;
    const body = [];
    const margin = ' '.repeat(indent);
    for (i++; i < lines.length && lines[i]?.trim() !== '```'; i++) {
      const raw = lines[i] ?? '';
      body.push(raw.startsWith(margin) ? raw.slice(indent) : raw.trimStart());
    }
    const first = body[0] ?? '';
    const block = { file, line, where: `${file}:${line}`, code: body.join('\n') };
    const notCompiled = NOT_COMPILED.exec(first)?.[1];
    const fragment = FRAGMENT.exec(first)?.[1];
    if (notCompiled !== undefined) block.notCompiled = notCompiled;
    if (fragment !== undefined) block.fragment = fragment;
    blocks.push(block);
  }
  return blocks;
}

/** The guides whose blocks are checked, from the repository root `root`. */
export function guideFiles(root) {
  const docs = readdirSync(`${root}/docs`)
    .filter((name) => name.endsWith('.md'))
    .sort();
  const packages = readdirSync(`${root}/packages`)
    .sort()
    .map((name) => `packages/${name}/README.md`);
  return [
    'README.md',
    ...docs.map((name) => `docs/${name}`),
    ...packages.filter((file) => existsSync(`${root}/${file}`)),
    'examples/README.md',
  ];
}

/** Every block of every guide. */
export function allBlocks(root) {
  return guideFiles(root).flatMap((file) =>
    extractBlocks(file, readFileSync(`${root}/${file}`, 'utf8')),
  );
}
