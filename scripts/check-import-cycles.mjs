// Import circles between the packages' source files: a module that reaches itself through its
// relative imports (type-only ones and `export ... from` included), so a layer that imports the
// layers above it shows up. Reads the specifiers with a regex (no dependency), prints each circle
// with its files, and exits 1 when there is one.
//
//   node scripts/check-import-cycles.mjs                    packages/*/src and testkit/src
//   node scripts/check-import-cycles.mjs packages/client    one package's src (or any folder)
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

// `import x from`, `import type { a } from`, `import * as x from`, `import x, { a } from`,
// `export { a } from`, `export type { a } from`, `export * from`, `export * as x from`; and the
// bare `import './x.js'`. Anchored at a line start, so doc comments' examples do not count.
const FROM =
  /^[ \t]*(?:import|export)\s+(?:type\s+)?(?:\*(?:\s+as\s+[\w$]+)?|\{[^}]*\}|[\w$]+(?:\s*,\s*(?:\{[^}]*\}|\*\s+as\s+[\w$]+))?)\s+from\s*['"]([^'"]+)['"]/gm;
const BARE = /^[ \t]*import\s*['"]([^'"]+)['"]/gm;

/** The relative specifiers a module's source imports or re-exports from, in order. */
export function relativeSpecifiers(source) {
  const found = [];
  for (const pattern of [FROM, BARE]) {
    for (const match of source.matchAll(pattern)) {
      if (match[1].startsWith('./') || match[1].startsWith('../')) found.push(match[1]);
    }
  }
  return found;
}

/**
 * The file a specifier of `from` names, among `files` (a set of paths with `/`), or undefined: a
 * `.js` specifier names the `.ts` file, one without extension the `.ts` file or the folder's index.
 */
function resolveSpecifier(from, specifier, files) {
  const base = join(dirname(from), specifier).split(sep).join('/');
  const candidates = /\.[cm]?js$/.test(base)
    ? [base.replace(/\.([cm]?)js$/, '.$1ts'), base]
    : [base, `${base}.ts`, `${base}/index.ts`];
  return candidates.find((candidate) => files.has(candidate));
}

/**
 * The import circles of `sources` (path with `/` -> source text): one entry per group of files
 * that reach each other, its files sorted, and for each of them the shortest circle through it
 * (`[a, b, a]`, from its first file in sort order), without repeats, shortest first.
 */
export function findCycles(sources) {
  const files = new Set(sources.keys());
  const edges = new Map();
  for (const [file, source] of sources) {
    const targets = new Set();
    for (const specifier of relativeSpecifiers(source)) {
      const target = resolveSpecifier(file, specifier, files);
      if (target !== undefined) targets.add(target);
    }
    edges.set(file, [...targets].sort());
  }
  return stronglyConnected(edges)
    .filter((group) => group.length > 1 || edges.get(group[0]).includes(group[0]))
    .map((group) => {
      const files = [...group].sort();
      const members = new Set(files);
      const cycles = new Map();
      for (const file of files) {
        const circle = rotateToSmallest(shortestCycle(file, edges, members).slice(0, -1));
        cycles.set(circle.join('\n'), [...circle, circle[0]]);
      }
      const shortFirst = (a, b) => a.length - b.length || (a.join('\n') < b.join('\n') ? -1 : 1);
      return { files, cycles: [...cycles.values()].sort(shortFirst) };
    })
    .sort((a, b) => (a.files[0] < b.files[0] ? -1 : 1));
}

/** Tarjan's strongly connected components, iteratively (source trees can be deep). */
function stronglyConnected(edges) {
  const index = new Map();
  const low = new Map();
  const onStack = new Set();
  const stack = [];
  const groups = [];
  let next = 0;
  for (const start of edges.keys()) {
    if (index.has(start)) continue;
    const work = [{ node: start, i: 0 }];
    index.set(start, next);
    low.set(start, next++);
    stack.push(start);
    onStack.add(start);
    while (work.length > 0) {
      const frame = work[work.length - 1];
      const targets = edges.get(frame.node);
      if (frame.i < targets.length) {
        const target = targets[frame.i++];
        if (!index.has(target)) {
          index.set(target, next);
          low.set(target, next++);
          stack.push(target);
          onStack.add(target);
          work.push({ node: target, i: 0 });
        } else if (onStack.has(target)) {
          low.set(frame.node, Math.min(low.get(frame.node), index.get(target)));
        }
        continue;
      }
      work.pop();
      if (work.length > 0) {
        const parent = work[work.length - 1].node;
        low.set(parent, Math.min(low.get(parent), low.get(frame.node)));
      }
      if (low.get(frame.node) === index.get(frame.node)) {
        const group = [];
        let member;
        do {
          member = stack.pop();
          onStack.delete(member);
          group.push(member);
        } while (member !== frame.node);
        groups.push(group);
      }
    }
  }
  return groups;
}

/** The shortest path from `file` back to itself inside `members` (breadth first). */
function shortestCycle(file, edges, members) {
  const previous = new Map();
  const queue = [file];
  for (let head = 0; head < queue.length; head++) {
    const node = queue[head];
    for (const target of edges.get(node)) {
      if (!members.has(target)) continue;
      if (target === file) {
        const path = [file];
        for (let at = node; at !== file; at = previous.get(at)) path.unshift(at);
        path.unshift(file);
        return path;
      }
      if (!previous.has(target)) {
        previous.set(target, node);
        queue.push(target);
      }
    }
  }
  throw new Error(`${file} is in no circle`);
}

function rotateToSmallest(cycle) {
  const at = cycle.indexOf([...cycle].sort()[0]);
  return [...cycle.slice(at), ...cycle.slice(0, at)];
}

/** Every `.ts` file under `dir` (declaration files left out), path with `/` -> text. */
export function readSources(dir, sources = new Map()) {
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) {
      if (name !== 'node_modules') readSources(path, sources);
    } else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) {
      sources.set(path.split(sep).join('/'), readFileSync(path, 'utf8'));
    }
  }
  return sources;
}

/** The folders to read: a package's src when given the package, packages/*\/src and testkit/src by default. */
function sourceDirs(args) {
  const named = args.length > 0 ? args : defaultDirs();
  return named.map((arg) => {
    const dir = resolve(arg);
    return existsSync(join(dir, 'src')) ? join(dir, 'src') : dir;
  });
}

function defaultDirs() {
  const packages = readdirSync(join(ROOT, 'packages'))
    .map((name) => join(ROOT, 'packages', name, 'src'))
    .filter((dir) => existsSync(dir));
  return [...packages, join(ROOT, 'testkit', 'src')];
}

/** A path as printed: from the current folder, with `/`. */
const shown = (path) => relative(process.cwd(), path).split(sep).join('/') || '.';

function main(args) {
  const dirs = sourceDirs(args);
  let circles = 0;
  for (const dir of dirs) {
    if (!existsSync(dir)) {
      console.error(`check-import-cycles: no folder ${dir}`);
      process.exitCode = 2;
      return;
    }
    for (const group of findCycles(readSources(dir))) {
      circles++;
      console.log(`import circle of ${group.files.length} files in ${shown(dir)}:`);
      for (const cycle of group.cycles) console.log(`  ${cycle.map(shown).join(' -> ')}`);
    }
  }
  const where = dirs.map(shown).join(', ');
  if (circles > 0) {
    console.log(`${circles} import circle(s) in ${where}`);
    process.exitCode = 1;
  } else {
    console.log(`no import circles in ${where}`);
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  main(process.argv.slice(2));
}
