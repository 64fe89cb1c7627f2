// A lease granted late (its TTL counts from the grant's send) and kept alive while the keepalive
// stream is open but silent, as after a server restart: the stream is redialled in time for the
// lease's first reply, not at the stall check one TTL/3 later, which comes after the lease's
// deadline. The embedded server's faults hold one stream while later ones pass; real etcd has no
// such fault (a proxy pause or SIGSTOP holds every connection alike), its restart is covered by
// the crash suite of lease-keepalive.test.ts.
import { EmbeddedEtcd } from '@etcdkit/server-embedded';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Etcd } from '../../src/etcd.js';
import type { Lease } from '../../src/lease/lease.js';
import {
  type CountingTransport,
  countingTransport,
  record,
  sleep,
  until,
} from './lease-keepalive-support.js';

/** The late grant's TTL, in s, and how long the server holds it, in ms: 1.5 s of its life left. */
const TTL = 6;
const GRANT_DELAY_MS = 4_500;

describe('lease keepalive on a silent stream (embedded server faults)', () => {
  let server: EmbeddedEtcd;
  let transport: CountingTransport;
  let etcd: Etcd;

  beforeEach(async () => {
    server = await EmbeddedEtcd.start();
    transport = countingTransport();
    etcd = new Etcd({ endpoints: [...server.endpoints], transport, dialTimeoutMs: 1_000 });
  });
  afterEach(async () => {
    server.faults.clear();
    await etcd.close();
    await server.stop();
  });

  /**
   * Grants a lease of TTL s that the server answers GRANT_DELAY_MS late, keeps it alive and checks
   * it outlives its deadline: refreshed on a second stream (the silent one redialled once), never
   * lost, alive on the server past the grant's send + TTL.
   */
  async function keepsTheLateGrant(grant: Promise<Lease>, grantSentAt: number): Promise<void> {
    const lease = await grant;
    const events = record(lease);
    await until(
      () => events.keepalives.length > 0 || events.lost !== undefined,
      'a keepalive reply or the loss',
      10_000,
    );
    expect(events.lost).toBeUndefined();
    // Its first keepalive after the redial answered it while it still lived.
    expect(events.keepalives).toHaveLength(1);
    expect(transport.opened).toBe(2);
    const deadline = grantSentAt + TTL * 1_000;
    await sleep(deadline + 500 - performance.now());
    expect(events.lost).toBeUndefined();
    expect(lease.signal.aborted).toBe(false);
    expect((await etcd.lease.timeToLive(lease.id)).ttl).toBeGreaterThan(0n);
    await lease.revoke();
  }

  it('redials at once when a lease joins a stream silent for longer than its first reply may take', async () => {
    // A lease kept alive on a stream the server holds: its keepalive stays unanswered.
    const holdStreams = server.faults.delay(60_000, 'LeaseKeepAlive');
    const first = await etcd.lease.grant(30, { keepAlive: true });
    const firstEvents = record(first);
    await until(() => transport.opened === 1, 'the keepalive stream opened');
    await sleep(300);
    // New streams pass from now on; the first one is still held (no reply came, none comes).
    holdStreams();
    await sleep(200);
    expect(firstEvents.keepalives).toEqual([]);
    expect(transport.opened).toBe(1);
    server.faults.delay(GRANT_DELAY_MS, 'LeaseGrant');
    const grantSentAt = performance.now();
    await keepsTheLateGrant(etcd.lease.grant(TTL, { keepAlive: true }), grantSentAt);
    // The late lease's keepalive never went on the silent stream: it was replaced on the spot.
    expect(transport.writes[0]).toBe(1);
    // The lease already kept alive was refreshed on the new stream too.
    expect(firstEvents.keepalives.length).toBeGreaterThan(0);
    expect(firstEvents.lost).toBeUndefined();
    await first.revoke();
  });

  it("redials when a lease's first keepalive goes unanswered for a third of its life left", async () => {
    // No stream yet: the late grant's keepalive opens one, which the server holds.
    const holdStreams = server.faults.delay(60_000, 'LeaseKeepAlive');
    server.faults.delay(GRANT_DELAY_MS, 'LeaseGrant');
    const grantSentAt = performance.now();
    const grant = etcd.lease.grant(TTL, { keepAlive: true });
    await until(() => transport.opened === 1, 'the keepalive stream opened', 10_000);
    // Once the server holds that stream, new ones pass; the redial comes 500 ms after the open.
    await sleep(150);
    holdStreams();
    await keepsTheLateGrant(grant, grantSentAt);
    // One keepalive on the held stream, then one on the stream replacing it.
    expect(transport.writes.slice(0, 2)).toEqual([1, 1]);
  });
});
