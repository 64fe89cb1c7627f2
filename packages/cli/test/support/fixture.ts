// What every suite of the CLI sets up per backend: a client to look at the keys, a temporary
// directory per test, and no child left running after a test.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Etcd } from '@etcdkit/client';
import type { TestBackend } from '@etcdkit/testkit';
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest';
import { killAll, untilAsync } from './etcdkit-process.js';

/** Accessors valid inside tests. */
export interface CliFixture {
  /** A client of the backend. */
  etcd(): Etcd;
  /** The backend's first endpoint. */
  endpoint(): string;
  /** A path in this test's own temporary directory. */
  path(name: string): string;
  /** Waits until `count` keys (holders and waiters) are under `name/`. */
  queued(name: string, count: number): Promise<void>;
}

/** Registers the hooks (in a describeEachBackend body) and returns the accessors. */
export function cliFixture(backend: () => TestBackend): CliFixture {
  let dir = '';
  let etcd: Etcd | undefined;
  beforeAll(() => {
    etcd = new Etcd({ endpoints: backend().endpoints });
  });
  afterAll(async () => {
    await etcd?.close();
  });
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'etcdkit-cli-'));
  });
  afterEach(async () => {
    await killAll();
    rmSync(dir, { recursive: true, force: true });
  });
  const client = (): Etcd => {
    if (etcd === undefined) throw new Error('cliFixture: the client exists inside tests only');
    return etcd;
  };
  return {
    etcd: client,
    endpoint: () => backend().endpoints[0]!,
    path: (name) => join(dir, name),
    queued: (name, count) =>
      untilAsync(
        async () => (await client().count({ prefix: `${name}/` })) === BigInt(count),
        `${count} keys under ${name}/`,
      ),
  };
}
