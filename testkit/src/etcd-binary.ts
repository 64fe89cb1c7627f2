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
 * Finds the etcd binary: `ETCDKIT_ETCD_BIN` when set (and then only that one; a wrong path is
 * reported, not papered over by PATH), else `etcd` on PATH. Runs `etcd --version` once per path.
 */
export function findEtcdBinary(env: TestkitEnv = process.env): EtcdBinaryLookup {
  const configured = env.ETCDKIT_ETCD_BIN?.trim();
  let path: string;
  if (configured !== undefined && configured !== '') {
    path = isAbsolute(configured) ? configured : resolve(configured);
    if (!isExecutableFile(path)) {
      return { found: false, reason: `ETCDKIT_ETCD_BIN=${configured} is not an executable file` };
    }
  } else {
    const onPath = searchPath('etcd', env.PATH ?? '');
    if (onPath === undefined) {
      return {
        found: false,
        reason: 'no etcd binary: ETCDKIT_ETCD_BIN is unset and `etcd` is not on PATH',
      };
    }
    path = onPath;
  }
  const cached = versionCache.get(path);
  if (cached !== undefined) return cached;
  const lookup = probeVersion(path);
  versionCache.set(path, lookup);
  return lookup;
}

/** Like {@link findEtcdBinary} but throws when there is no binary. */
export function requireEtcdBinary(env: TestkitEnv = process.env): EtcdBinary {
  const lookup = findEtcdBinary(env);
  if (!lookup.found) throw new Error(lookup.reason);
  return lookup.binary;
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
