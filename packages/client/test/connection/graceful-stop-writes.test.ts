// A rolling restart of a real 3-member etcd under a stream of writes (issue 31, "Done when"): each
// member in turn stopped with SIGTERM and started again. etcd 3.4 then says GOAWAY and closes the
// connection under the requests it took (its log: "failed to write status: transport is
// closing"): those are truly of unknown outcome. etcd 3.5 stops gracefully: GOAWAY, then it answers
// every request it took before closing (streams above the GOAWAY's last stream are refused, and
// retried), so none is lost with its connection: its unknown outcomes are answers of its own
// ("request timed out" while the leader moves). Every acknowledged write is there exactly once; a
// write reported not applied is not there; a write of unknown outcome is there at most once; none
// the servers refused or never got comes back as OutcomeUnknownError. Run on every transport
// (ETCDKIT_TEST_TRANSPORT).
import { describeRealEtcd, type EtcdCluster, startEtcdCluster } from '@etcdkit/testkit';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Connection } from '../../src/connection/connection.js';
import { EtcdError, OutcomeUnknownError, WriteNotAppliedError } from '../../src/errors.js';
import { etcdserverpb_KV } from '../../src/generated/methods.js';
import { TransportError } from '../../src/transport/types.js';

const bytes = (s: string) => new TextEncoder().encode(s);
const text = (b: Uint8Array | null | undefined) => new TextDecoder().decode(b ?? new Uint8Array());
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

const WRITERS = 4;
const PREFIX = 'rolling/';

/** The transport failure at the root of an error's causes, if any. */
function transportCause(error: unknown): TransportError | undefined {
  for (let e = error; e instanceof Error; e = e.cause) {
    if (e instanceof TransportError) return e;
  }
  return undefined;
}

describeRealEtcd('writes through a rolling restart (SIGTERM) of a real etcd cluster', () => {
  let cluster: EtcdCluster;
  beforeAll(async () => {
    cluster = await startEtcdCluster({ members: 3 });
  }, 120_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  it('acknowledged writes are there once, not-applied ones are not, none refused is unknown', async () => {
    const conn = new Connection({
      endpoints: cluster.endpoints,
      callTimeoutMs: 10_000,
      dialTimeoutMs: 1_000,
    });
    const acknowledged: string[] = [];
    const notApplied: string[] = [];
    const unknown: Array<{ key: string; error: OutcomeUnknownError }> = [];
    const other: unknown[] = [];
    let stop = false;
    const writer = async (n: number) => {
      for (let i = 0; !stop; i++) {
        const key = `${PREFIX}${n}-${i}`;
        try {
          await conn.unary(etcdserverpb_KV.Put, { key: bytes(key), value: bytes(key) }, 'write');
          acknowledged.push(key);
        } catch (error) {
          if (error instanceof WriteNotAppliedError) notApplied.push(key);
          else if (error instanceof OutcomeUnknownError) unknown.push({ key, error });
          else other.push(error);
        }
      }
    };
    const writers = Array.from({ length: WRITERS }, (_, n) => writer(n));
    try {
      for (const member of cluster.members) {
        await sleep(300);
        await member.stop();
        await sleep(300);
        await member.start();
        await cluster.waitForLeader();
      }
      await sleep(300);
    } finally {
      stop = true;
      await Promise.all(writers);
    }

    const res = await conn.unary(
      etcdserverpb_KV.Range,
      { key: bytes(PREFIX), rangeEnd: bytes('rolling0') },
      'read',
    );
    await conn.close();
    const versions = new Map(res.kvs.map((kv) => [text(kv.key), Number(kv.version)]));
    for (const kv of res.kvs) expect(text(kv.value)).toBe(text(kv.key));
    // Each acknowledged write applied exactly once (a second apply would make version 2).
    expect(acknowledged.filter((k) => versions.get(k) !== 1)).toEqual([]);
    // Nothing reported not applied was applied.
    expect(notApplied.filter((k) => versions.has(k))).toEqual([]);
    // A write of unknown outcome was sent, and applied at most once.
    expect(unknown.filter(({ error }) => transportCause(error)?.sent !== true)).toEqual([]);
    expect(unknown.filter(({ key }) => (versions.get(key) ?? 0) > 1)).toEqual([]);
    if (!cluster.version.startsWith('3.4.')) {
      // A graceful stop answers what it took: no write's outcome is lost with its connection.
      const dropped = unknown.filter(({ error }) => /Connection dropped/.test(error.message));
      expect(dropped.map(({ error }) => error.message)).toEqual([]);
    }
    // Any other failure is typed (a deadline, say, while a member restarts).
    expect(other.filter((e) => !(e instanceof EtcdError))).toEqual([]);
    expect(acknowledged.length).toBeGreaterThan(WRITERS * 10);
  }, 180_000);
});
