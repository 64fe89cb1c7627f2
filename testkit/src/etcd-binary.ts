import { spawnSync } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, isAbsolute, join, resolve } from 'node:path';

/** Environment variables the testkit reads; `process.env` by default. */
export type TestkitEnv = Readonly<Record<string, string | undefined>>;

/** A usable etcd server binary. */
export interface EtcdBinary {
  /** Absolute path of the executable. */
  readonly path: string;
  /** Server version as printed by `etcd --version`, e.g. `3.4.23`. */
  readonly version: string;
}

/** Result of looking for an etcd binary: the binary, or why there is none. */
export type EtcdBinaryLookup =
  | { readonly found: true; readonly binary: EtcdBinary }
  | { readonly found: false; readonly reason: string };

const versionCache = new Map<string, EtcdBinaryLookup>();

/**
 * The binary of the per-version copy of a suite being collected or run (see
 * {@link setSuiteEtcdBinary}); lookups that read `process.env` find it first.
 */
let suiteBinaryPath: string | undefined;

/**
 * Finds the etcd binary: `ETCDKIT_ETCD_BIN` when set (and then only that one; a wrong path is
 * reported, not papered over by PATH), else the first of `ETCDKIT_ETCD_BINS`, else `etcd` on PATH.
 * Called without `env` inside a suite's copy for one etcd version (describeEachBackend's real etcd,
 * describeRealEtcd), it finds that version's binary. Runs `etcd --version` once per path.
 */
export function findEtcdBinary(env?: TestkitEnv): EtcdBinaryLookup {
  if (env === undefined && suiteBinaryPath !== undefined) {
    return lookUpEtcdBinary(suiteBinaryPath, 'the suite binary ');
  }
  const vars = env ?? process.env;
  const configured = vars.ETCDKIT_ETCD_BIN?.trim();
  if (configured !== undefined && configured !== '') {
    return lookUpEtcdBinary(configured, 'ETCDKIT_ETCD_BIN=');
  }
  const listed = listedEtcdBinaries(vars);
  if (listed.length > 0) return lookUpEtcdBinary(listed[0]!, 'ETCDKIT_ETCD_BINS entry ');
  const onPath = searchPath('etcd', vars.PATH ?? '');
  if (onPath === undefined) {
    return {
      found: false,
      reason: 'no etcd binary: ETCDKIT_ETCD_BIN is unset and `etcd` is not on PATH',
    };
  }
  return lookUpEtcdBinary(onPath, '');
}

/** Like {@link findEtcdBinary} but throws when there is no binary. */
export function requireEtcdBinary(env?: TestkitEnv): EtcdBinary {
  const lookup = findEtcdBinary(env);
  if (!lookup.found) throw new Error(lookup.reason);
  return lookup.binary;
}

/**
 * The entries of `ETCDKIT_ETCD_BINS`, a comma-separated list of etcd binaries (one per version a
 * run covers, e.g. `/usr/bin/etcd,/opt/etcdkit/etcd-3.5/usr/bin/etcd`); empty when unset.
 */
export function listedEtcdBinaries(env: TestkitEnv = process.env): string[] {
  return (env.ETCDKIT_ETCD_BINS ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
}

/**
 * The binary at `path` (relative paths from the working directory) with its version, or why it
 * cannot be used; `origin` prefixes the path in that reason, e.g. `ETCDKIT_ETCD_BIN=`.
 */
export function lookUpEtcdBinary(path: string, origin: string): EtcdBinaryLookup {
  const absolute = isAbsolute(path) ? path : resolve(path);
  if (!isExecutableFile(absolute)) {
    return { found: false, reason: `${origin}${path} is not an executable file` };
  }
  const cached = versionCache.get(absolute);
  if (cached !== undefined) return cached;
  const lookup = probeVersion(absolute);
  versionCache.set(absolute, lookup);
  return lookup;
}

/**
 * Makes `path` the binary that {@link findEtcdBinary} (without `env`), and so `startEtcd()` and
 * `startEtcdCluster()` without a `binary`, find; `undefined` ends that. The suite helpers set it
 * while they collect and run one etcd version's copy of a suite.
 */
export function setSuiteEtcdBinary(path: string | undefined): void {
  suiteBinaryPath = path;
}

function probeVersion(path: string): EtcdBinaryLookup {
  const result = spawnSync(path, ['--version'], { encoding: 'utf8', timeout: 10_000 });
  if (result.error !== undefined) {
    return { found: false, reason: `${path} --version failed: ${result.error.message}` };
  }
  const match = /etcd Version:\s*v?(\S+)/.exec(`${result.stdout}\n${result.stderr}`);
  if (result.status !== 0 || match === null) {
    const output = `${result.stdout}${result.stderr}`.trim().split('\n').slice(-3).join(' | ');
    return {
      found: false,
      reason: `${path} --version exited with ${result.status ?? result.signal}: ${output}`,
    };
  }
  return { found: true, binary: { path, version: match[1]! } };
}

function searchPath(command: string, pathVariable: string): string | undefined {
  for (const dir of pathVariable.split(delimiter)) {
    if (dir === '') continue;
    const candidate = join(dir, command);
    if (isExecutableFile(candidate)) return candidate;
  }
  return undefined;
}

function isExecutableFile(path: string): boolean {
  try {
    if (!statSync(path).isFile()) return false;
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
