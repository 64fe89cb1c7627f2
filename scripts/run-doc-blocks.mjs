// Runs the guides' code as a reader would: every complete ```ts program of README.md, docs/*.md and
// packages/*/README.md (see doc-blocks.mjs for the markers of the blocks that are not) is written
// as pasted into a fresh app of the packed packages, type-checked there by tsc (strict, against the
// packed packages' .d.ts, as a reader's project sees them), then run, and must have no type error,
// exit 0 and write nothing on stderr, within a timeout. A type error fails its block (with the
// guide's file:line) without running it.
//   - A block importing 'vitest' is a test file: `vitest run` runs it.
//   - Any other block runs with `tsx`, as the guides tell readers to.
//   - A block that names the endpoint http://127.0.0.1:2379 (or localhost:2379) gets a fresh
//     `etcdkit-server` (the packed bin) listening there; those blocks run one after another, beside
//     the blocks that start their own embedded server, which run `--jobs` at a time.
// Prints a line per block (file:line, result, seconds; the output of a failed one), then totals.
// Exit code 0 when every block ran clean, 1 otherwise.
//
//   node scripts/run-doc-blocks.mjs [--skip-build] [--keep] [--verbose] [--jobs N] [--timeout SECONDS] [FILTER...]
//     --skip-build  pack the packages' dist/ as built (CI builds them in `npm run check` before)
//     --keep        leave the app in place and print its path
//     --verbose     print what every block wrote, not only a failed one's
//     FILTER        run only the blocks whose file:line starts with one (docs/kv.md, README.md:43)
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { allBlocks } from './doc-blocks.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url)).replace(/\/$/, '');
const PACKAGES = ['client', 'recipes', 'otel', 'server-embedded', 'verify', 'cli'];
const NAMED_ENDPOINT = /\b(?:127\.0\.0\.1|localhost):2379\b/;
const ENDPOINT = 'http://127.0.0.1:2379';

const options = parseArgs(process.argv.slice(2));

function parseArgs(argv) {
  const parsed = {
    skipBuild: false,
    keep: false,
    verbose: false,
    jobs: Math.max(1, Math.min(4, availableParallelism() - 1)),
    timeoutMs: 60_000,
    filters: [],
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--skip-build') parsed.skipBuild = true;
    else if (arg === '--keep') parsed.keep = true;
    else if (arg === '--verbose') parsed.verbose = true;
    else if (arg === '--jobs' || arg === '--timeout') {
      const value = Number(argv[++i]);
      if (!Number.isInteger(value) || value < 1) usage(`${arg} needs a positive whole number`);
      if (arg === '--jobs') parsed.jobs = value;
      else parsed.timeoutMs = value * 1000;
    } else if (arg.startsWith('-')) usage(`unknown option ${arg}`);
    else parsed.filters.push(arg);
  }
  return parsed;
}

function usage(problem) {
  console.error(
    `run-doc-blocks: ${problem}\nusage: run-doc-blocks.mjs [--skip-build] [--keep] [--verbose] [--jobs N] [--timeout SECONDS] [FILTER...]`,
  );
  process.exit(2);
}

/**
 * Runs a command to its end; resolves with its exit code (or the signal that ended it, or
 * 'timeout'), stdout and stderr. Detached, so a timeout ends the whole process group.
 */
function exec(command, args, { cwd = ROOT, timeoutMs } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd,
      // Plain output in CI logs (vitest colours it otherwise).
      env: { ...process.env, NO_COLOR: '1' },
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    const timer =
      timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            timedOut = true;
            killGroup(child);
          }, timeoutMs);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code: timedOut ? 'timeout' : (code ?? signal), stdout, stderr });
    });
  });
}

async function must(command, args, cwd) {
  const { code, stdout, stderr } = await exec(command, args, { cwd });
  if (code !== 0) throw new Error(`${command} ${args.join(' ')} exited with ${code}\n${stderr}`);
  return stdout;
}

function killGroup(child) {
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

/** The version the repository pins for a package the blocks import (its manifests' ranges). */
function pinnedVersion(name) {
  const manifests = ['package.json', ...PACKAGES.map((p) => `packages/${p}/package.json`)];
  for (const path of manifests) {
    const manifest = JSON.parse(readFileSync(join(ROOT, path), 'utf8'));
    for (const field of ['devDependencies', 'dependencies', 'peerDependencies']) {
      const version = manifest[field]?.[name];
      if (version !== undefined) return version;
    }
  }
  throw new Error(`a block imports ${name}, which no package.json of the repository names`);
}

/** The registry packages the blocks import (not node: builtins, not the packed @etcdkit ones). */
function importedPackages(blocks) {
  const names = new Set(['tsx', 'vitest', 'typescript', '@types/node']);
  for (const { code } of blocks) {
    for (const [, specifier] of code.matchAll(/\bfrom\s+'([^']+)'/g)) {
      if (specifier.startsWith('node:') || specifier.startsWith('.')) continue;
      const parts = specifier.split('/');
      const name = specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
      if (!name.startsWith('@etcdkit/')) names.add(name);
    }
    // The grpc-js transport loads its optional peer dependency; a reader choosing it installs it.
    if (/transport:\s*'grpc-js'/.test(code)) names.add('@grpc/grpc-js');
  }
  return [...names].sort().map((name) => `${name}@${pinnedVersion(name)}`);
}

/** Packs every package (prepack rewrites their manifests) and installs them into a fresh app. */
async function freshApp(dir, blocks) {
  const tarballs = join(dir, 'tarballs');
  const app = join(dir, 'app');
  mkdirSync(tarballs);
  mkdirSync(join(app, 'blocks'), { recursive: true });
  const workspaces = PACKAGES.flatMap((name) => ['--workspace', `packages/${name}`]);
  await must('npm', ['pack', ...workspaces, '--pack-destination', tarballs, '--silent'], ROOT);
  writeFileSync(
    join(app, 'package.json'),
    `${JSON.stringify({ name: 'etcdkit-doc-blocks', private: true, type: 'module' }, null, 2)}\n`,
  );
  const packed = readdirSync(tarballs).map((name) => join(tarballs, name));
  await must(
    'npm',
    ['install', '--no-audit', '--no-fund', ...packed, ...importedPackages(blocks)],
    app,
  );
  return app;
}

/** Starts the packed etcdkit-server on ENDPOINT; resolves with a stop function once it serves. */
async function startServer(app) {
  const bin = join(app, 'node_modules', '.bin', 'etcdkit-server');
  const child = spawn(bin, ['--listen-client-urls', ENDPOINT], {
    cwd: app,
    detached: true,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let log = '';
  const exited = new Promise((resolve) => child.on('exit', resolve));
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`etcdkit-server not ready:\n${log}`)), 30_000);
    child.stderr.on('data', (chunk) => {
      log += chunk;
      if (log.includes('ready to serve client requests')) {
        clearTimeout(timer);
        resolve();
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`etcdkit-server on ${ENDPOINT} exited with ${code}:\n${log}`));
    });
  });
  return async () => {
    process.kill(-child.pid, 'SIGTERM');
    await exited;
  };
}

/** The file a block is written to: named for where it is, `.test.ts` when vitest runs it. */
function fileFor(block) {
  const slug = block.where.replace(/[^A-Za-z0-9]+/g, '-');
  return `blocks/${slug}${/from\s+'vitest'/.test(block.code) ? '.test.ts' : '.ts'}`;
}

/**
 * The reader's strict settings (the repository's own, tsconfig.base.json): each block a module of
 * an ESM app, checked against the packed packages' .d.ts (not skipped: a broken published type is
 * an error too).
 */
const APP_TSCONFIG = {
  compilerOptions: {
    target: 'ES2022',
    lib: ['ES2022'],
    module: 'NodeNext',
    moduleResolution: 'NodeNext',
    types: ['node'],
    strict: true,
    noUncheckedIndexedAccess: true,
    noImplicitOverride: true,
    noFallthroughCasesInSwitch: true,
    isolatedModules: true,
    verbatimModuleSyntax: true,
    esModuleInterop: true,
    moduleDetection: 'force',
    noEmit: true,
  },
  include: ['blocks/**/*.ts'],
};

/**
 * Writes every block into the app and type-checks them with one tsc run; resolves with each block's
 * errors (`file.md:line: TSxxxx: message`, the guide's line), and the errors in no block's file.
 */
async function typeCheck(app, blocks) {
  writeFileSync(join(app, 'tsconfig.json'), `${JSON.stringify(APP_TSCONFIG, null, 2)}\n`);
  const byFile = new Map();
  for (const block of blocks) {
    const file = fileFor(block);
    writeFileSync(join(app, file), `${block.code}\n`);
    byFile.set(file, block);
  }
  const tsc = join(app, 'node_modules', '.bin', 'tsc');
  const { code, stdout, stderr } = await exec(tsc, ['-p', 'tsconfig.json', '--pretty', 'false'], {
    cwd: app,
  });
  const errors = new Map(blocks.map((block) => [block.where, []]));
  const elsewhere = [];
  let last;
  for (const line of `${stdout}${stderr}`.split('\n')) {
    if (line.trim() === '') continue;
    const at = /^(.+?)\((\d+),\d+\): error (TS\d+: .*)$/.exec(line);
    if (at === null) {
      // A message's continuation lines are indented; anything else is tsc's own.
      if (last !== undefined && /^\s/.test(line)) last.push(line);
      else elsewhere.push(line);
      continue;
    }
    const [, file, row, message] = at;
    const block = byFile.get(file);
    if (block === undefined) {
      elsewhere.push(line);
      last = elsewhere;
      continue;
    }
    // Line 1 of a block is the line after its fence.
    const list = errors.get(block.where);
    list.push(`${block.file}:${block.line + Number(row)}: ${message}`);
    last = list;
  }
  if (code !== 0 && elsewhere.length === 0 && [...errors.values()].every((e) => e.length === 0)) {
    elsewhere.push(`tsc exited with ${code} and no error it could be read from`);
  }
  return { errors, elsewhere };
}

async function runBlock(app, block) {
  const file = fileFor(block);
  const bin = (name) => join(app, 'node_modules', '.bin', name);
  const [command, args] = file.endsWith('.test.ts')
    ? [bin('vitest'), ['run', file]]
    : [bin('tsx'), [file]];
  const began = performance.now();
  const stop = NAMED_ENDPOINT.test(block.code) ? await startServer(app) : undefined;
  try {
    const result = await exec(command, args, { cwd: app, timeoutMs: options.timeoutMs });
    return { ...result, seconds: (performance.now() - began) / 1000 };
  } finally {
    await stop?.();
  }
}

/** Runs `blocks` `jobs` at a time, reporting each as it ends. */
async function runAll(app, blocks, jobs, report) {
  const queue = [...blocks];
  const worker = async () => {
    for (let block = queue.shift(); block !== undefined; block = queue.shift()) {
      report(block, await runBlock(app, block));
    }
  };
  await Promise.all(Array.from({ length: Math.min(jobs, blocks.length) }, worker));
}

async function main() {
  const selected = allBlocks(ROOT).filter(
    (block) =>
      !block.file.startsWith('examples/') &&
      (options.filters.length === 0 || options.filters.some((f) => block.where.startsWith(f))),
  );
  const runnable = selected.filter((b) => b.notCompiled === undefined && b.fragment === undefined);
  for (const block of selected) {
    if (block.notCompiled !== undefined)
      console.log(`skip ${block.where} (not compiled: ${block.notCompiled})`);
    else if (block.fragment !== undefined)
      console.log(`skip ${block.where} (fragment: ${block.fragment})`);
  }
  if (!options.skipBuild) {
    console.log('run-doc-blocks: building the packages');
    await must('npm', ['run', 'build'], ROOT);
  }
  const work = mkdtempSync(join(tmpdir(), 'etcdkit-doc-blocks-'));
  const failed = [];
  try {
    console.log('run-doc-blocks: packing and installing into a fresh app');
    const app = await freshApp(work, runnable);
    console.log(`run-doc-blocks: type-checking ${runnable.length} blocks`);
    const typed = await typeCheck(app, runnable);
    if (typed.elsewhere.length > 0) {
      // Not a block's error (a published .d.ts, the app's settings): every block is in doubt.
      failed.push('type-check');
      console.log(`FAIL type-check outside the blocks\n${typed.elsewhere.join('\n')}`);
    }
    const typeErrors = (block) => typed.errors.get(block.where) ?? [];
    for (const block of runnable.filter((b) => typeErrors(b).length > 0)) {
      failed.push(block.where);
      console.log(
        `FAIL ${block.where} (type errors, not run)\n${typeErrors(block)
          .map((e) => `     | ${e}`)
          .join('\n')}`,
      );
    }
    const typeClean = runnable.filter((b) => typeErrors(b).length === 0);
    console.log(`run-doc-blocks: running ${typeClean.length} blocks`);
    const report = (block, { code, stdout, stderr, seconds }) => {
      const ok = code === 0 && stderr.trim() === '';
      const took = `${seconds.toFixed(1)} s`;
      const output = `${stdout}${stderr}`.trimEnd().replace(/^/gm, '     | ');
      if (ok) {
        console.log(`ok   ${block.where} (${took})${options.verbose ? `\n${output}` : ''}`);
        return;
      }
      failed.push(block.where);
      const why = code === 0 ? 'exit 0 but wrote to stderr' : `exit ${code}`;
      console.log(`FAIL ${block.where} (${why}, ${took})\n${output}`);
    };
    await Promise.all([
      runAll(
        app,
        typeClean.filter((b) => NAMED_ENDPOINT.test(b.code)),
        1,
        report,
      ),
      runAll(
        app,
        typeClean.filter((b) => !NAMED_ENDPOINT.test(b.code)),
        options.jobs,
        report,
      ),
    ]);
  } finally {
    if (options.keep) console.log(`run-doc-blocks: kept ${work}`);
    else rmSync(work, { recursive: true, force: true });
  }
  const skipped = selected.length - runnable.length;
  console.log(
    `run-doc-blocks: ${runnable.filter((b) => !failed.includes(b.where)).length} ran clean, ${failed.length} failed, ${skipped} not run (fragments or not compiled)`,
  );
  if (failed.length > 0) {
    console.log(`failed: ${failed.join(', ')}`);
    process.exitCode = 1;
  }
}

try {
  await main();
} catch (error) {
  console.error(`run-doc-blocks: ${error instanceof Error ? error.message : error}`);
  process.exitCode = 1;
}
