// docs/compatibility.md's matrix is written by hand from CI's `=== tested versions` output; this
// keeps it from drifting silently: its runtimes are the ones .ci/run tests, their versions the ones
// .ci/install-runtime.sh pins, and each etcd column the version of the binary CI runs (the system's
// etcd, apt's 3.4; the 3.5 series .ci/install-etcd-3.5.sh installs). A binary that is not installed
// here is a named skip, unless ETCDKIT_COMPAT_REQUIRE_INSTALLED=1 (CI's own step, run once every
// install has run).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { findEtcdBinary, lookUpEtcdBinary } from '@etcdkit/testkit';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const read = (path: string) => readFileSync(`${ROOT}${path}`, 'utf8');
const requireInstalled = process.env.ETCDKIT_COMPAT_REQUIRE_INSTALLED?.trim() === '1';

/** The matrix: its etcd columns' versions and each row's runtime and version. */
function docMatrix(): { etcd: string[]; runtimes: { name: string; version: string }[] } {
  const lines = read('docs/compatibility.md')
    .split('\n')
    .filter((line) => line.startsWith('| '));
  const cells = (line: string) =>
    line
      .split('|')
      .slice(1, -1)
      .map((cell) => cell.trim());
  const etcd = cells(lines[0] ?? '').flatMap((cell) => /^etcd (\S+)$/.exec(cell)?.[1] ?? []);
  const runtimes = lines.slice(2).map((line) => {
    const [name = '', version = ''] = (cells(line)[0] ?? '').split(' ');
    return { name, version };
  });
  return { etcd, runtimes };
}

/** `NAME=(a b c)` of a bash script, as its words. */
function bashArray(script: string, name: string): string[] {
  const body = new RegExp(`^${name}=\\(([^)]*)\\)`, 'm').exec(script)?.[1];
  if (body === undefined) throw new Error(`no ${name}=(...) in the script`);
  return body.trim().split(/\s+/);
}

/** The runtime pinned by .ci/install-runtime.sh for one of .ci/run's runtime names. */
function pinnedRuntime(name: string): { name: string; version: string } {
  const script = read('.ci/install-runtime.sh');
  if (name.startsWith('node')) {
    const version = new RegExp(`\\[${name}\\]=(\\S+?)[\\s)]`).exec(script)?.[1];
    if (version === undefined) throw new Error(`install-runtime.sh pins no ${name}`);
    return { name: 'Node', version };
  }
  const branch = new RegExp(`^\\s*${name}\\)\\n\\s*version=(\\S+)$`, 'm').exec(script)?.[1];
  if (branch === undefined) throw new Error(`install-runtime.sh pins no ${name}`);
  return { name: name === 'bun' ? 'Bun' : 'Deno', version: branch };
}

// apt's etcd is the one on PATH (ETCDKIT_ETCD_BIN may name another version for a run).
const etcd34 = findEtcdBinary({ PATH: process.env.PATH });
const etcd35 = lookUpEtcdBinary(
  `${process.env.ETCDKIT_ETCD_35_DIR ?? '/opt/etcdkit/etcd-3.5'}/usr/bin/etcd`,
  '',
);

describe('docs/compatibility.md names what CI installs', () => {
  const matrix = docMatrix();

  it('has Node 20 and each runtime .ci/run installs, at the version install-runtime.sh pins', () => {
    const names = bashArray(read('.ci/run'), 'runtime_names');
    expect(names).toEqual(['node22', 'node24', 'node26', 'bun', 'deno']);
    expect(matrix.runtimes.slice(1)).toEqual(names.map(pinnedRuntime));
  });

  it("has CI's own Node 20 first, within the engines range", () => {
    const engines = JSON.parse(read('package.json')).engines.node as string;
    const minimum = /\^20\.(\d+)\.\d+/.exec(engines)?.[1];
    const [major, minor] = (matrix.runtimes[0]?.version ?? '').split('.').map(Number);
    expect(matrix.runtimes[0]?.name).toBe('Node');
    expect(major).toBe(20);
    expect(minor).toBeGreaterThanOrEqual(Number(minimum));
  });

  it('has two etcd columns, 3.4 and the series install-etcd-3.5.sh installs', () => {
    const series = /^want_series="([^"]+)"$/m.exec(read('.ci/install-etcd-3.5.sh'))?.[1];
    expect(series).toBe('3.5');
    expect(matrix.etcd.map((v) => v.split('.').slice(0, 2).join('.'))).toEqual(['3.4', series]);
  });

  for (const [column, lookup] of [
    [0, etcd34],
    [1, etcd35],
  ] as const) {
    const missing = lookup.found ? undefined : lookup.reason;
    it.skipIf(missing !== undefined && !requireInstalled)(
      `names the installed etcd's version in column ${column + 1} (${missing ?? (lookup.found && lookup.binary.path)})`,
      () => {
        if (!lookup.found) throw new Error(lookup.reason);
        expect(lookup.binary.version).toBe(matrix.etcd[column]);
      },
    );
  }
});
