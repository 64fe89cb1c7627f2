// ElectionClient.observe across broken streams, on the embedded server with injected faults: the
// observation reopens Observe after a dropped connection or a server restart, yields no value twice
// and none older than the last, reports what changed while it was down as the latest state, and
// still ends on abort, on close and on errors a new stream would meet again.
import { EmbeddedCluster, EmbeddedEtcd, GrpcCode } from '@etcdkit/server-embedded';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ElectionClient } from '../../src/election/election.js';
import {
  AbortedError,
  ClientClosedError,
  InvalidArgumentError,
  PermissionDeniedError,
  UnimplementedError,
} from '../../src/errors.js';
import { Etcd } from '../../src/etcd.js';
import type { Lease } from '../../src/lease/lease.js';
import { follow, ObserveProbe } from './election-observe-support.js';
import { eventually } from './lock-election-support.js';

describe('ElectionClient.observe across broken streams (embedded server)', () => {
  let server: EmbeddedEtcd;
  let writer: Etcd;
  let observing: Etcd;
  let probe: ObserveProbe;
  let election: ElectionClient;
  const leases: Lease[] = [];
  let count = 0;
  let name = '';

  async function lease(): Promise<Lease> {
    const granted = await writer.lease.grant(60);
    leases.push(granted);
    return granted;
  }

  beforeAll(async () => {
    server = await EmbeddedEtcd.start();
    writer = new Etcd({ endpoints: [...server.endpoints] });
  });
  afterAll(async () => {
    await writer?.close();
    await server?.stop();
  });
  beforeEach(() => {
    name = `observe-resume/${++count}`;
    observing = new Etcd({ endpoints: [...server.endpoints] });
    probe = new ObserveProbe(observing.connection);
    election = new ElectionClient(probe);
  });
  afterEach(async () => {
    server.faults.clear();
    probe.release();
    await observing.close();
    for (const held of leases.splice(0)) await held.revoke().catch(() => {});
  });

  it('after a dropped connection it reopens, skips the leader it already yielded, and goes on', async () => {
    const first = await lease();
    const one = await writer.election.campaign(name, 'one', { lease: first });
    const observer = follow(election, name);
    try {
      await eventually(() => observer.values.length === 1);
      server.faults.dropConnections();
      // The new stream starts with the current leader, 'one' again: received, not yielded.
      await eventually(() => probe.opened === 2 && probe.responses === 2);
      expect(probe.ended).toEqual(['UNAVAILABLE']);
      expect(observer.values).toEqual(['one']);

      await writer.election.proclaim(one, 'one-b');
      const waiting = writer.election.campaign(name, 'two', { lease: await lease() });
      await writer.election.resign(one);
      const two = await waiting;
      await eventually(() => observer.values.length === 3);
      expect(observer.values).toEqual(['one', 'one-b', 'two']);
      expect(observer.kvs.map((kv) => kv.createRevision)).toEqual([one.rev, one.rev, two.rev]);
      expect(probe.opened).toBe(2);
    } finally {
      expect(await observer.stop()).toBeInstanceOf(AbortedError);
    }
  });

  it('what changed while no stream was open comes once, as the latest leader and value', async () => {
    const one = await writer.election.campaign(name, 'one', { lease: await lease() });
    const observer = follow(election, name);
    try {
      await eventually(() => observer.values.length === 1);
      probe.hold();
      server.faults.dropConnections();
      await eventually(() => probe.held === 1);
      // Meanwhile: a proclaim, a new leader, and its proclaim.
      await writer.election.proclaim(one, 'one-b');
      const waiting = writer.election.campaign(name, 'two', { lease: await lease() });
      await writer.election.resign(one);
      const two = await waiting;
      const latest = await writer.election.proclaim(two, 'two-b');
      probe.release();
      await eventually(() => observer.values.length === 2);
      expect(observer.values).toEqual(['one', 'two-b']);
      expect(observer.kvs.map((kv) => [kv.createRevision, kv.modRevision])).toEqual([
        [one.rev, one.rev],
        [two.rev, latest.header.revision],
      ]);
      // And it keeps following the leader on the new stream.
      await writer.election.proclaim(two, 'two-c');
      await eventually(() => observer.values.length === 3);
      expect(observer.values).toEqual(['one', 'two-b', 'two-c']);
    } finally {
      await observer.stop();
    }
  });

  it('goes on through a server restart', async () => {
    const one = await writer.election.campaign(name, 'one', { lease: await lease() });
    const observer = follow(election, name);
    try {
      await eventually(() => observer.values.length === 1);
      await server.restart();
      await writer.election.proclaim(one, 'one-b');
      await eventually(() => observer.values.length === 2);
      expect(observer.values).toEqual(['one', 'one-b']);
      expect(probe.opened).toBeGreaterThanOrEqual(2);
      expect(probe.ended[0]).toBe('UNAVAILABLE');
    } finally {
      await observer.stop();
    }
  }, 30_000);

  it('waits on an election whose leader resigned while it was down, and yields the next one', async () => {
    const one = await writer.election.campaign(name, 'one', { lease: await lease() });
    const observer = follow(election, name);
    try {
      await eventually(() => observer.values.length === 1);
      probe.hold();
      server.faults.dropConnections();
      await eventually(() => probe.held === 1);
      await writer.election.resign(one);
      probe.release();
      // The new stream has no leader to report: it waits for the first candidate.
      await eventually(() => probe.opened === 2);
      const two = await writer.election.campaign(name, 'two', { lease: await lease() });
      await eventually(() => observer.values.length === 2);
      expect(observer.values).toEqual(['one', 'two']);
      expect(observer.kvs[1]?.createRevision).toBe(two.rev);
    } finally {
      await observer.stop();
    }
  });

  it('with resume: false the iteration fails with the broken stream error', async () => {
    await writer.election.campaign(name, 'one', { lease: await lease() });
    const observer = follow(election, name, { resume: false });
    await eventually(() => observer.values.length === 1);
    server.faults.dropConnections();
    const error = await observer.ended;
    expect(error?.code).toBe('UNAVAILABLE');
    expect(observer.values).toEqual(['one']);
    expect(probe.opened).toBe(1);
  });

  for (const refusal of [
    {
      code: GrpcCode.PERMISSION_DENIED,
      message: 'etcdserver: permission denied',
      error: PermissionDeniedError,
    },
    { code: GrpcCode.UNIMPLEMENTED, message: 'unknown service', error: UnimplementedError },
  ]) {
    it(`a reopen refused with ${refusal.error.name} ends the observation with it`, async () => {
      await writer.election.campaign(name, 'one', { lease: await lease() });
      const observer = follow(election, name);
      await eventually(() => observer.values.length === 1);
      server.faults.failNext('Observe', { code: refusal.code, message: refusal.message });
      server.faults.dropConnections();
      expect(await observer.ended).toBeInstanceOf(refusal.error);
      expect(observer.values).toEqual(['one']);
      expect(probe.opened).toBe(2);
    });
  }

  it('aborting while the stream is down ends it with AbortedError, without another stream', async () => {
    await writer.election.campaign(name, 'one', { lease: await lease() });
    const observer = follow(election, name);
    await eventually(() => observer.values.length === 1);
    probe.hold();
    server.faults.dropConnections();
    await eventually(() => probe.held === 1);
    expect(await observer.stop()).toBeInstanceOf(AbortedError);
    expect(probe.opened).toBe(1);
  });

  it('closing the client while reopening keeps failing ends it with ClientClosedError', async () => {
    await writer.election.campaign(name, 'one', { lease: await lease() });
    const observer = follow(election, name);
    await eventually(() => observer.values.length === 1);
    server.faults.failNext('Observe', { code: GrpcCode.UNAVAILABLE, count: 1_000_000 });
    server.faults.dropConnections();
    // The drop, then at least one reopen that failed: the observation is in its retry loop.
    await eventually(() => probe.ended.length >= 2, 15_000);
    // The dropped stream, then reopens answered "etcdserver: request timed out".
    expect(probe.ended[0]).toBe('UNAVAILABLE');
    expect(new Set(probe.ended.slice(1))).toEqual(new Set(['REQUEST_TIMEOUT']));
    await observing.close();
    expect(await observer.ended).toBeInstanceOf(ClientClosedError);
    expect(observer.values).toEqual(['one']);
  }, 30_000);

  it('a resume option that is not a boolean is refused before anything is sent', () => {
    expect(() => election.observe(name, { resume: 'yes' as unknown as boolean })).toThrow(
      new InvalidArgumentError('options.resume must be a boolean, got "yes"'),
    );
    expect(probe.opened).toBe(0);
  });

  it('breaking out of the loop closes the stream without another', async () => {
    await writer.election.campaign(name, 'one', { lease: await lease() });
    const seen: string[] = [];
    for await (const kv of election.observe(name)) {
      seen.push(kv.text());
      break;
    }
    expect(seen).toEqual(['one']);
    // Closed by the loop, not ended by the server: the probe saw it neither end nor reopen.
    expect(probe.opened).toBe(1);
    expect(probe.ended).toEqual([]);
  });
});

describe('ElectionClient.observe when its member loses the leader (simulated cluster)', () => {
  it('a require-leader observation ended with "no leader" goes on on another member', async () => {
    const cluster = await EmbeddedCluster.start({ members: 3 });
    const [cut, ...others] = cluster.members;
    const observing = new Etcd({ endpoints: [...cluster.endpoints], requireLeader: true });
    const writer = new Etcd({ endpoints: others.map((member) => member.endpoint) });
    const probe = new ObserveProbe(observing.connection);
    const following = follow(new ElectionClient(probe), 'observe-no-leader');
    try {
      const one = await writer.election.campaign('observe-no-leader', 'one', {
        lease: await writer.lease.grant(60),
      });
      await eventually(() => following.values.length === 1);
      expect(observing.connection.currentEndpoint).toBe(new URL(cut!.endpoint).host);
      cut!.partition();
      await eventually(() => probe.ended.length === 1);
      expect(probe.ended).toEqual(['NO_LEADER']);
      await writer.election.proclaim(one, 'one-b');
      await eventually(() => following.values.length === 2);
      expect(following.values).toEqual(['one', 'one-b']);
      expect(observing.connection.currentEndpoint).not.toBe(new URL(cut!.endpoint).host);
    } finally {
      await following.stop();
      await observing.close();
      await writer.close();
      await cluster.stop();
    }
  });
});
