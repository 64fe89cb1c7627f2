// The built packages (packages/*/dist: tsup, target node20), what users run, for the benches' child
// processes. Under tsx the TypeScript sources run through esbuild with keepNames (a defineProperty
// per closure creation) and other transforms, so a bench that should show what users get runs these.
// builtPackages() resolves the client's, recipes' and embedded server's ESM entry points of a
// checkout (ETCDKIT_BENCH_RECIPES_ROOT, else this one), building a package first (`npm run build -w`)
// when any file of its src/ is newer than its dist/, and gives the env and node flags a child needs
// so that the built files import each other, not the sources:
//   fork(script, [], { execArgv: built.execArgv, env: built.env })  // then import(built.recipes)
import { execFile } from 'node:child_process';
import { open, readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';

/** The packages a bench child may import, by their folder under packages/. */
const PACKAGES = ['client', 'recipes', 'server-embedded'] as const;

/** The built entry points of one checkout, and how to start a child process that imports them. */
export interface BuiltPackages {
  /** The checkout. */
  readonly root: string;
  /** file: URLs of the ESM entry points (dist/index.js) of @etcdkit/client, recipes, server-embedded. */
  readonly client: string;
  readonly recipes: string;
  readonly server: string;
  /**
   * Node flags for the child: this process's without `--conditions=etcdkit-source` (with it, the
   * built recipes would import the client's sources), tsx kept for the bench script itself.
   */
  readonly execArgv: string[];
  /**
   * The child's environment: tsx reads the checkout's tsconfig.base.json, which maps no
   * `@etcdkit/*` paths (tsconfig.json maps them to the sources, also for imports from dist/); and
   * ETCDKIT_BENCH_BUILT_ROOT, so that the child's builtPackages() does not build again.
   */
  readonly env: NodeJS.ProcessEnv;
}

/** The checkout this file is in. */
export const thisCheckout = fileURLToPath(new URL('..', import.meta.url)).replace(/\/$/, '');

/** ETCDKIT_BENCH_RECIPES_ROOT (another checkout: the before side of an ABBA), else this one. */
export function benchRoot(): string {
  return (process.env.ETCDKIT_BENCH_RECIPES_ROOT || thisCheckout).replace(/\/$/, '');
}

const built = new Map<string, Promise<BuiltPackages>>();

/** The built packages of `root`, built first where dist/ is older than src/ (once per process). */
export function builtPackages(root = benchRoot()): Promise<BuiltPackages> {
  let packages = built.get(root);
  if (packages === undefined) {
    packages = resolve(root);
    built.set(root, packages);
  }
  return packages;
}

async function resolve(root: string): Promise<BuiltPackages> {
  // A child of a process that built them runs what its parent checked: no build in mid-run.
  if (process.env.ETCDKIT_BENCH_BUILT_ROOT !== root) {
    for (const name of PACKAGES) await buildIfStale(root, name);
  }
  const entry = (name: string) => pathToFileURL(join(root, 'packages', name, 'dist/index.js')).href;
  return {
    root,
    client: entry('client'),
    recipes: entry('recipes'),
    server: entry('server-embedded'),
    execArgv: withoutSourceCondition(process.execArgv),
    env: {
      ...process.env,
      TSX_TSCONFIG_PATH: join(root, 'tsconfig.base.json'),
      ETCDKIT_BENCH_BUILT_ROOT: root,
    },
  };
}

/** Node flags without the `etcdkit-source` export condition, in either spelling. */
function withoutSourceCondition(flags: readonly string[]): string[] {
  const kept: string[] = [];
  for (let i = 0; i < flags.length; i++) {
    const flag = flags[i] as string;
    if (flag === '--conditions=etcdkit-source' || flag === '-C=etcdkit-source') continue;
    if ((flag === '--conditions' || flag === '-C') && flags[i + 1] === 'etcdkit-source') {
      i++;
      continue;
    }
    kept.push(flag);
  }
  return kept;
}

/** Builds packages/<name> of `root` when a file of its src/ is newer than its dist/index.js. */
async function buildIfStale(root: string, name: string): Promise<void> {
  const folder = join(root, 'packages', name);
  const stale = async () => {
    const builtAt = await stat(join(folder, 'dist/index.js')).then(
      (s) => s.mtimeMs,
      () => 0,
    );
    return (await newestFile(join(folder, 'src'))) > builtAt;
  };
  if (!(await stale())) return;
  // One build at a time per checkout (tsup empties dist/ first): other benches may build too.
  const lock = join(root, 'node_modules', `.etcdkit-bench-build-${name}.lock`);
  const release = await exclusive(lock);
  try {
    // Another process may have built it while this one waited for the lock.
    if (!(await stale())) return;
    await promisify(execFile)('npm', ['run', 'build', '-w', `@etcdkit/${name}`], {
      cwd: root,
      maxBuffer: 64 * 1024 * 1024,
    });
  } catch (error) {
    const output = (error as { stdout?: string; stderr?: string }).stderr ?? '';
    throw new Error(
      `bench: building packages/${name} of ${root} failed (its src/ is newer than its dist/): ` +
        output.slice(-2000),
      { cause: error },
    );
  } finally {
    await release();
  }
}

/** The newest modification time (ms) of any file under `dir`. */
async function newestFile(dir: string): Promise<number> {
  let newest = 0;
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    newest = Math.max(newest, (await stat(join(entry.parentPath, entry.name))).mtimeMs);
  }
  return newest;
}

/** Takes the lock file `path` (waits while another process holds it; stale after 5 min). */
async function exclusive(path: string): Promise<() => Promise<void>> {
  for (;;) {
    try {
      await (await open(path, 'wx')).close();
      return () => rm(path, { force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const age =
        Date.now() -
        (await stat(path).then(
          (s) => s.mtimeMs,
          () => Date.now(),
        ));
      if (age > 300_000) await rm(path, { force: true });
      else await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
}
