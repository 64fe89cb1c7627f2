// The informer: a consistent local copy of a range (list at R, watch from R + 1, re-list when the
// resume point is compacted), with change callbacks.
import { describeEachBackend, startTcpProxy } from '@etcdkit/testkit';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { PermissionDeniedError } from '../../src/errors.js';
import { Etcd } from '../../src/etcd.js';
import type { KeyValue } from '../../src/key-value.js';
import { informer } from '../../src/kv/informer.js';
import { AUTH_BACKENDS, type AuthServer, enableAuth, startAuthServer } from '../auth-servers.js';
import { streamLog, waitFor } from '../watch/watch-support.js';

/** Records an informer's callbacks as `add k=v`, `update k=v (was w)`, `delete k (was w)`. */
function changes() {
  const log: string[] = [];
  return {
    log,
    callbacks: {
      onAdd: (kv: KeyValue) => log.push(`add ${kv.keyText()}=${kv.text()}`),
      onUpdate: (kv: KeyValue, previous: KeyValue) =>
        log.push(`update ${kv.keyText()}=${kv.text()} (was ${previous.text()})`),
      onDelete: (previous: KeyValue) =>
        log.push(`delete ${previous.keyText()} (was ${previous.text()})`),
    },
  };
}

const contents = (kvs: readonly KeyValue[]) => kvs.map((kv) => `${kv.keyText()}=${kv.text()}`);

describeEachBackend('informer', ({ backend, prefix }) => {
  let etcd: Etcd;

  beforeAll(() => {
    etcd = new Etcd({ endpoints: backend().endpoints });
  });
  afterAll(async () => {
    await etcd?.close();
  });

  it('lists the range at one revision, then applies every change, with callbacks', async () => {
    const p = prefix();
    await etcd.put(`${p}b`, '1');
    const listedAt = (await etcd.put(`${p}a`, '1')).header.revision;
    await etcd.put(`${p.slice(0, -1)}-outside`, 'x');
    const seen = changes();
    const copy = informer(etcd, { prefix: p, ...seen.callbacks });
    try {
      expect(await copy.synced).toBe(listedAt + 1n);
      expect(seen.log).toEqual([`add ${p}a=1`, `add ${p}b=1`]);
      expect(contents(copy.values())).toEqual([`${p}a=1`, `${p}b=1`]);
      seen.log.length = 0;
      await etcd.put(`${p}c`, '1');
      await etcd.put(`${p}a`, '2');
      const last = (await etcd.delete(`${p}b`)).header.revision;
      await waitFor(() => copy.revision === last, 10_000, `the copy at ${last}`);
      expect(seen.log).toEqual([`add ${p}c=1`, `update ${p}a=2 (was 1)`, `delete ${p}b (was 1)`]);
      expect(contents(copy.values())).toEqual([`${p}a=2`, `${p}c=1`]);
      expect(copy.get(`${p}a`)?.version).toBe(2n);
      expect(copy.get(`${p}b`)).toBeUndefined();
      expect(copy.size).toBe(2);
    } finally {
      await copy.close();
    }
    expect(copy.closed).toBe(true);
  });

  it('works on a namespace, with keys relative to it', async () => {
    const p = prefix();
    const ns = etcd.namespace(p);
    await ns.put('x', '1');
    const copy = informer(ns, { all: true });
    try {
      await copy.synced;
      const r = (await ns.put('y', '2')).header.revision;
      await waitFor(() => copy.revision === r, 10_000, 'the put');
      expect(contents(copy.values())).toEqual(['x=1', 'y=2']);
      expect(copy.get('y')?.text()).toBe('2');
    } finally {
      await copy.close();
    }
  });

  it('re-lists when its resume point was compacted, reporting the differences as changes', async () => {
    const p = prefix();
    const proxy = await startTcpProxy(backend().endpoints[0]!);
    const log = streamLog();
    const watching = new Etcd({
      endpoints: [proxy.endpoint],
      dialTimeoutMs: 500,
      watch: { progressIntervalMs: 200, stallTimeoutMs: 200, hooks: log.hooks },
    });
    const seen = changes();
    const copy = informer(watching, { prefix: p, ...seen.callbacks });
    let relisted = 0;
    copy.on('relist', () => relisted++);
    try {
      for (const key of ['a', 'b', 'c']) await etcd.put(`${p}${key}`, '1');
      await waitFor(() => seen.log.length === 3, 10_000, 'the first keys');
      await copy.synced;
      // Cut the informer off (its stream stalls and cannot reconnect), change and compact. Under
      // load a stall may already have been seen (and healed) before the pause: wait for a new one.
      const stallsBefore = stalls(log.reasons);
      proxy.pause();
      await waitFor(() => stalls(log.reasons) > stallsBefore, 10_000, 'the stall');
      seen.log.length = 0;
      await etcd.put(`${p}a`, '2');
      await etcd.delete(`${p}b`);
      await etcd.put(`${p}d`, '1');
      await etcd.put(`${p}c`, '1');
      const now = (await etcd.put(`${p}a`, '3')).header.revision;
      await etcd.compact(now);
      proxy.resume();
      await waitFor(() => copy.revision >= now, 20_000, 'the re-listing');
      expect(relisted).toBe(1);
      expect(seen.log).toEqual([
        `update ${p}a=3 (was 1)`,
        `update ${p}c=1 (was 1)`,
        `add ${p}d=1`,
        `delete ${p}b (was 1)`,
      ]);
      expect(contents(copy.values())).toEqual([`${p}a=3`, `${p}c=1`, `${p}d=1`]);
      // And it follows live changes again.
      seen.log.length = 0;
      const r = (await etcd.put(`${p}e`, '1')).header.revision;
      await waitFor(() => copy.revision === r, 10_000, 'a live change');
      expect(seen.log).toEqual([`add ${p}e=1`]);
    } finally {
      proxy.resume();
      await copy.close();
      await watching.close();
      await proxy.close();
    }
  }, 60_000);

  it('close() stops it: the watch stream closes and later changes are not applied', async () => {
    const p = prefix();
    const log = streamLog();
    const client = new Etcd({ endpoints: backend().endpoints, watch: { hooks: log.hooks } });
    try {
      const copy = informer(client, { prefix: p });
      await copy.synced;
      expect(log.open()).toBe(1);
      let ended = false;
      copy.on('end', () => {
        ended = true;
      });
      await copy.close();
      expect(ended).toBe(true);
      await waitFor(() => log.open() === 0, 5_000, 'the stream to close');
      await client.put(`${p}late`, 'x');
      expect(copy.get(`${p}late`)).toBeUndefined();
      const aborted = informer(client, { prefix: p, signal: AbortSignal.abort() });
      await expect(aborted.synced).rejects.toMatchObject({ code: 'ABORTED' });
      expect(() => informer(client, { prefix: p, bogus: 1 } as never)).toThrow(
        /unknown informer option/,
      );
      expect(() => informer(client, { key: 'a', prefix: 'b' } as never)).toThrow(/only one of/);
    } finally {
      await client.close();
    }
  });
});

describeEachBackend(
  'informer with auth',
  ({ name }) => {
    let server: AuthServer;

    beforeAll(async () => {
      server = await startAuthServer(name);
      await enableAuth(server.endpoint);
    });
    afterAll(async () => {
      await server?.stop();
    });

    it('a listing the user may not read ends it with PermissionDeniedError, then end, listing once', async () => {
      const log = streamLog();
      const etcd = new Etcd({
        endpoints: [server.endpoint],
        auth: { username: 'nobody', password: 'nobody-secret' },
        watch: { hooks: log.hooks },
      });
      try {
        const copy = informer(etcd, { prefix: 'secret/' });
        const seen: string[] = [];
        copy.on('error', (error) => seen.push(`error ${error.code}`));
        copy.on('end', () => seen.push('end'));
        const failure = await copy.synced.then(
          () => undefined,
          (error: unknown) => error,
        );
        expect(failure).toBeInstanceOf(PermissionDeniedError);
        await waitFor(() => seen.length === 2, 5_000, 'error and end');
        expect(seen).toEqual(['error PERMISSION_DENIED', 'end']);
        expect(copy.closed).toBe(true);
        // It never got as far as a watch.
        expect(log.opened).toBe(0);
      } finally {
        await etcd.close();
      }
    });
  },
  { only: AUTH_BACKENDS },
);

function stalls(reasons: readonly string[]): number {
  return reasons.filter((reason) => reason === 'stall').length;
}
