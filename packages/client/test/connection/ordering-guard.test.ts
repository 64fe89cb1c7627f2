// The read-ordering guard (option `ordering`, issue 15 item 5): a client that has seen revision R
// and reads serializably from a member behind R is refused, fails over to an up-to-date member, or
// gets OrderViolationError after the bound; without the option the stale read is returned.
//
// Embedded: a 3-member EmbeddedCluster with one member partitioned, so its serializable reads
// answer from what it had applied. Real etcd: a 3-member cluster, and as the lagging endpoint an
// `etcd grpc-proxy` in front of it, whose cache answers serializable ranges with the response (and
// header revision) it cached, until a write through the proxy itself invalidates it. (The testkit
// cannot cut a real member off from its peers while clients still reach it: etcd's peer streams
// run both ways over connections either side dials.)

import { type ChildProcess, spawn } from 'node:child_process';
import { EmbeddedCluster } from '@etcdkit/server-embedded';
import {
  describeRealEtcd,
  type EtcdCluster,
  freePort,
  requireEtcdBinary,
  startEtcdCluster,
} from '@etcdkit/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OrderingGuard } from '../../src/connection/ordering.js';
import { OrderViolationError } from '../../src/errors.js';
import { Etcd, type EtcdOptions } from '../../src/etcd.js';
import { etcdserverpb_KV } from '../../src/generated/methods.js';
import { op } from '../../src/kv/op.js';

/** An up-to-date member, a lagging one, and a way to make them agree on a key first. */
interface Lagging {
  readonly fresh: string;
  readonly lagging: string;
  /** Writes `key` = `value` where both members see it; the lagging one then falls behind again. */
  writeEverywhere(key: string, value: string): Promise<void>;
}

const host = (url: string) => new URL(url).host;

function orderingSuite(setup: () => Lagging): void {
  let n = 0;
  const clients: Etcd[] = [];
  const client = (options: Omit<EtcdOptions, 'endpoints'> & { endpoints?: string[] }) => {
    const { fresh, lagging } = setup();
    const etcd = new Etcd({ endpoints: [fresh, lagging], ...options });
    clients.push(etcd);
    return etcd;
  };
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
  });

  /** A key both members hold as `v1` and only the fresh one as `v2`, written by `etcd`. */
  async function staleKey(etcd: Etcd): Promise<{ key: string; revision: bigint }> {
    const key = `ordering/${++n}`;
    await setup().writeEverywhere(key, 'v1');
    const { header } = await etcd.put(key, 'v2');
    return { key, revision: header.revision };
  }

  it('without the option, a serializable read after an endpoint switch goes back in time', async () => {
    const etcd = client({});
    const { key } = await staleKey(etcd);
    expect(etcd.connection.seenRevision).toBeUndefined();
    etcd.connection.redial(); // the fresh member is dropped: the next call goes to the lagging one
    const kv = await etcd.get(key, { serializable: true });
    expect(kv?.text()).toBe('v1');
    expect(etcd.connection.currentEndpoint).toBe(host(setup().lagging));
  });

  it('with the option, the stale answer is refused and the read fails over to a fresh member', async () => {
    const switches: string[] = [];
    const etcd = client({
      ordering: true,
      hooks: { onEndpointSwitch: (e) => switches.push(`${e.from}->${e.to}`) },
    });
    const { key, revision } = await staleKey(etcd);
    expect(etcd.connection.seenRevision).toBe(revision);
    etcd.connection.redial();
    const result = await etcd.range({ key, serializable: true });
    expect(result.kvs.map((kv) => kv.text())).toEqual(['v2']);
    expect(result.header.revision).toBeGreaterThanOrEqual(revision);
    const { fresh, lagging } = setup();
    expect(switches).toEqual([
      `${host(fresh)}->${host(lagging)}`,
      `${host(lagging)}->${host(fresh)}`,
    ]);
    expect(etcd.connection.currentEndpoint).toBe(host(fresh));
  });

  it('namespaced views and read-only serializable txns are guarded by the same seen revision', async () => {
    const etcd = client({ ordering: true });
    const { key, revision } = await staleKey(etcd);
    const [prefix, name] = ['ordering/', key.slice('ordering/'.length)];
    const ns = etcd.namespace(prefix);
    const fresh = host(setup().fresh);
    etcd.connection.redial();
    expect((await ns.get(name, { serializable: true }))?.text()).toBe('v2');
    expect(etcd.connection.currentEndpoint).toBe(fresh);
    etcd.connection.redial();
    expect(await ns.count({ key: name }, { serializable: true })).toBe(1n);
    expect(etcd.connection.currentEndpoint).toBe(fresh);
    etcd.connection.redial();
    const txn = await etcd
      .txn()
      .then(op.get(key, { serializable: true }))
      .commit();
    expect(txn.header.revision).toBeGreaterThanOrEqual(revision);
    expect(txn.responses[0]?.kind === 'range' && txn.responses[0].kvs[0]?.text()).toBe('v2');
  });

  it('a watch event raises the seen revision: a later serializable read is at least as new', async () => {
    const etcd = client({ ordering: true });
    const key = `ordering/${++n}`;
    await setup().writeEverywhere(key, 'v1');
    const writer = new Etcd({ endpoints: [setup().fresh] });
    clients.push(writer);
    const watcher = etcd.watch({ key });
    const seen = (async () => {
      for await (const batch of watcher) return batch.events.map((e) => e.kv.text());
      return [];
    })();
    await watcher.ready();
    const { header } = await writer.put(key, 'v2');
    expect(await seen).toEqual(['v2']);
    expect(etcd.connection.seenRevision).toBeGreaterThanOrEqual(header.revision);
    etcd.connection.redial();
    expect((await etcd.get(key, { serializable: true }))?.text()).toBe('v2');
    expect(etcd.connection.currentEndpoint).toBe(host(setup().fresh));
  });

  it('only lagging endpoints left: OrderViolationError after maxSwitches stale answers', async () => {
    const attempts: number[] = [];
    const etcd = client({
      ordering: { maxSwitches: 2 },
      retry: { minDelayMs: 1, maxDelayMs: 5 },
      hooks: { onCall: (e) => e.method === '/etcdserverpb.KV/Range' && attempts.push(e.attempts) },
    });
    const { key, revision } = await staleKey(etcd);
    const { lagging } = setup();
    etcd.connection.setEndpoints([lagging]);
    const probe = new Etcd({ endpoints: [lagging] });
    clients.push(probe);
    const behind = (await probe.range({ key, serializable: true })).header.revision;
    expect(behind).toBeLessThan(revision);

    const error = await etcd.get(key, { serializable: true }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OrderViolationError);
    const violation = error as OrderViolationError;
    expect(violation.code).toBe('ORDER_VIOLATION');
    expect(violation.seenRevision).toBe(revision);
    expect(violation.answeredRevision).toBe(behind);
    expect(violation.endpoint).toBe(host(lagging));
    // The first answer and two more tries, each refused.
    expect(attempts).toEqual([3]);

    // maxSwitches 0: the first stale answer is final.
    const strict = client({ ordering: { maxSwitches: 0 } });
    await strict.put(key, 'v3');
    strict.connection.setEndpoints([lagging]);
    await expect(strict.get(key, { serializable: true })).rejects.toBeInstanceOf(
      OrderViolationError,
    );
  });

  it('rejects a bad ordering option with InvalidConfigError', () => {
    const { fresh } = setup();
    for (const ordering of [{ maxSwitches: -1 }, { maxSwitches: 1.5 }, 'yes']) {
      expect(
        () => new Etcd({ endpoints: [fresh], ordering: ordering as EtcdOptions['ordering'] }),
      ).toThrow(/ordering/);
    }
  });
}

describe('ordering guard [cluster: embedded]', () => {
  let cluster: EmbeddedCluster;
  let admin: Etcd;
  beforeAll(async () => {
    cluster = await EmbeddedCluster.start({ members: 3 });
    admin = new Etcd({ endpoints: [cluster.members[0]!.endpoint] });
  });
  afterAll(async () => {
    await admin?.close();
    await cluster?.stop();
  });
  orderingSuite(() => ({
    fresh: cluster.members[0]!.endpoint,
    lagging: cluster.members[2]!.endpoint,
    writeEverywhere: async (key, value) => {
      const behind = cluster.members[2]!;
      behind.heal();
      await admin.put(key, value);
      behind.partition();
    },
  }));
});

/** `etcd grpc-proxy start` in front of `endpoints`, on a free port; resolves once it answers. */
async function startGrpcProxy(
  endpoints: readonly string[],
): Promise<{ readonly child: ChildProcess; readonly url: string }> {
  const port = await freePort();
  const child = spawn(
    requireEtcdBinary().path,
    [
      'grpc-proxy',
      'start',
      `--endpoints=${endpoints.map((e) => new URL(e).host).join(',')}`,
      `--listen-addr=127.0.0.1:${port}`,
      `--advertise-client-url=127.0.0.1:${port}`,
    ],
    { stdio: 'ignore' },
  );
  const url = `http://127.0.0.1:${port}`;
  const probe = new Etcd({ endpoints: [url], retry: { maxAttempts: 50, maxDelayMs: 200 } });
  try {
    await probe.maintenance.status();
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  } finally {
    await probe.close();
  }
  return { child, url };
}

describeRealEtcd('ordering guard [cluster: etcd]', () => {
  let cluster: EtcdCluster;
  let proxy: ChildProcess;
  let proxyUrl: string;
  let admin: Etcd;
  let cached: Etcd;
  beforeAll(async () => {
    cluster = await startEtcdCluster({ members: 3 });
    ({ child: proxy, url: proxyUrl } = await startGrpcProxy(cluster.endpoints));
    admin = new Etcd({ endpoints: [cluster.endpoints[0]!] });
    cached = new Etcd({ endpoints: [proxyUrl] });
  }, 90_000);
  afterAll(async () => {
    await Promise.all([admin?.close(), cached?.close()]);
    if (proxy && proxy.exitCode === null) {
      const exited = new Promise((resolve) => proxy.once('exit', resolve));
      proxy.kill('SIGTERM');
      await exited;
    }
    await cluster?.stop();
  });
  orderingSuite(() => ({
    fresh: cluster.endpoints[0]!,
    lagging: proxyUrl,
    writeEverywhere: async (key, value) => {
      await admin.put(key, value);
      // Through the proxy, reads are cached (as serializable) with their header; writes through
      // other endpoints do not invalidate them, so its serializable reads stay at this revision.
      await cached.get(key);
      await cached.count({ key });
    },
  }));
});

describe('which reads the ordering guard checks', () => {
  const guard = new OrderingGuard(undefined);
  const range = (serializable: boolean) => ({
    requestRange: { key: new Uint8Array([1]), serializable },
  });
  it('checks nothing before the first answer, then only serializable ranges and txns of them', () => {
    expect(guard.floor(etcdserverpb_KV.Range, { serializable: true })).toBeUndefined();
    guard.observe({ header: { revision: 7n } });
    guard.observe({ header: { revision: 5n } });
    guard.observe({});
    expect(guard.seen).toBe(7n);
    expect(guard.floor(etcdserverpb_KV.Range, { serializable: true })).toBe(7n);
    expect(guard.floor(etcdserverpb_KV.Range, { serializable: false })).toBeUndefined();
    expect(guard.floor(etcdserverpb_KV.Put, { serializable: true })).toBeUndefined();
    const txn = (success: unknown[], failure: unknown[] = []) =>
      guard.floor(etcdserverpb_KV.Txn, { success, failure });
    expect(txn([range(true)], [range(true)])).toBe(7n);
    // As etcd serves them: one linearizable range, a write or a nested txn takes the quorum path.
    expect(txn([range(true)], [range(false)])).toBeUndefined();
    expect(txn([range(true), { requestPut: { key: new Uint8Array([1]) } }])).toBeUndefined();
    expect(txn([{ requestTxn: { success: [range(true)] } }])).toBeUndefined();
  });
});
