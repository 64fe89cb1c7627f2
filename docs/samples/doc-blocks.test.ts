// scripts/doc-blocks.mjs: which ```ts blocks the compile test and the runner see, where they are, and
// what their first line says they are.
import { expect, test } from 'vitest';
import { extractBlocks } from '../../scripts/doc-blocks.mjs';

test('a block is a program, a fragment or not compiled, as its first line says', () => {
  const markdown = [
    '# Guide',
    '```ts',
    '// fragment: the middle of a program',
    'await work();',
    '```',
    '```sh',
    'npm test',
    '```',
    '- a list item:',
    '  ```ts',
    '  // not compiled: an outline',
    '  if (x) {',
    '    y();',
    '  }',
    '  ```',
    '```typescript',
    "console.log('whole');",
    '```',
  ].join('\n');
  expect(extractBlocks('docs/guide.md', markdown)).toEqual([
    {
      file: 'docs/guide.md',
      line: 2,
      where: 'docs/guide.md:2',
      code: '// fragment: the middle of a program\nawait work();',
      fragment: 'the middle of a program',
    },
    {
      file: 'docs/guide.md',
      line: 10,
      where: 'docs/guide.md:10',
      code: '// not compiled: an outline\nif (x) {\n  y();\n}',
      notCompiled: 'an outline',
    },
    {
      file: 'docs/guide.md',
      line: 16,
      where: 'docs/guide.md:16',
      code: "console.log('whole');",
    },
  ]);
});
