// Interop of the Lock and Election services with the real `etcdctl lock` and `etcdctl elect`, on
// every backend (etcdctl against the embedded server too). etcdctl runs Go's client-side recipes
// (KV txns, watches, a kept-alive session), not these services: the two meet on the key layout.
import { describeEachBackend } from '@etcdkit/testkit';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { toText } from '../../src/bytes.js';
import { Etcd } from '../../src/etcd.js';
import type { Lease } from '../../src/lease/lease.js';
import { Etcdctl, etcdctlFound, eventually, settlement, sleep } from './lock-election-support.js';

describe.skipIf(!etcdctlFound)('etcdctl interop', () => {
  describeEachBackend('Lock and Election services with etcdctl', ({ backend, prefix }) => {
    let etcd: Etcd;
    const leases: Lease[] = [];
    const children: Etcdctl[] = [];

    const etcdctl = (...args: string[]): Etcdctl => {
      const child = new Etcdctl(backend().endpoints, ['--dial-timeout', '3s', ...args]);
      children.push(child);
      return child;
    };

    async function lease(): Promise<Lease> {
      const granted = await etcd.lease.grant(30);
      leases.push(granted);
      return granted;
    }

    /** Keys under `name/`, oldest first: the first one holds the lock or leads. */
    async function queue(name: string): Promise<string[]> {
      const result = await etcd.range({
        prefix: `${name}/`,
        sort: { target: 'create', order: 'ascend' },
      });
      return result.kvs.map((kv) => kv.keyText());
    }

    beforeAll(() => {
      etcd = new Etcd({ endpoints: backend().endpoints });
    });
    afterEach(async () => {
      for (const child of children.splice(0)) await child.kill();
      for (const held of leases.splice(0)) await held.revoke().catch(() => {});
    });
    afterAll(async () => {
      await etcd?.close();
    });

    it('etcdctl lock and LockClient never hold the same lock at once', async () => {
      const name = `${prefix()}lock`;
      const first = etcdctl('lock', name);
      const [ctlKey] = await first.waitForLines(1);
      expect(ctlKey).toMatch(new RegExp(`^${name}/[0-9a-f]+$`));

      const mine = await lease();
      const waiting = etcd.lock.lock(name, { lease: mine });
      await eventually(async () => (await queue(name)).length === 2);
      await sleep(300);
      expect(await settlement(waiting)).toBe('pending');
      expect((await queue(name))[0]).toBe(ctlKey);

      // SIGTERM makes etcdctl unlock; only then is our lock granted.
      await first.terminate();
      const held = await waiting;
      expect(await queue(name)).toEqual([toText(held.key)]);

      const second = etcdctl('lock', name);
      await eventually(async () => (await queue(name)).length === 2);
      await sleep(300);
      expect(second.lines).toEqual([]);
      expect((await queue(name))[0]).toBe(toText(held.key));

      await etcd.lock.unlock(held.key);
      const [secondKey] = await second.waitForLines(1);
      expect(await queue(name)).toEqual([secondKey]);
      await second.terminate();
      expect(await queue(name)).toEqual([]);
    });

    it('etcdctl elect and ElectionClient agree on the leader, both ways', async () => {
      const name = `${prefix()}election`;
      const observed: string[] = [];
      const controller = new AbortController();
      const observing = (async () => {
        try {
          for await (const kv of etcd.election.observe(name, { signal: controller.signal })) {
            observed.push(kv.text());
          }
        } catch {
          // Aborted at the end of the test.
        }
      })();
      try {
        const ctlOne = etcdctl('elect', name, 'ctl-one');
        const [ctlKey, ctlValue] = await ctlOne.waitForLines(2);
        expect(ctlValue).toBe('ctl-one');
        const current = await etcd.election.leader(name);
        expect(current.keyText()).toBe(ctlKey);
        expect(current.text()).toBe('ctl-one');

        const mine = await lease();
        const campaigning = etcd.election.campaign(name, 'mine', { lease: mine });
        await eventually(async () => (await queue(name)).length === 2);
        await sleep(300);
        expect(await settlement(campaigning)).toBe('pending');
        await ctlOne.terminate(); // resigns
        const leader = await campaigning;

        const listener = etcdctl('elect', '-l', name);
        expect(await listener.waitForLines(2)).toEqual([toText(leader.key), 'mine']);

        const ctlTwo = etcdctl('elect', name, 'ctl-two');
        await eventually(async () => (await queue(name)).length === 2);
        await sleep(300);
        expect(ctlTwo.lines).toEqual([]);
        await etcd.election.proclaim(leader, 'mine-b');
        await etcd.election.resign(leader);
        const [twoKey, twoValue] = await ctlTwo.waitForLines(2);
        expect(twoValue).toBe('ctl-two');
        expect((await etcd.election.leader(name)).keyText()).toBe(twoKey);

        expect(await listener.waitForLines(6)).toEqual([
          toText(leader.key),
          'mine',
          toText(leader.key),
          'mine-b',
          twoKey,
          'ctl-two',
        ]);
        await eventually(() => observed.length === 4);
        expect(observed).toEqual(['ctl-one', 'mine', 'mine-b', 'ctl-two']);
      } finally {
        controller.abort();
        await observing;
      }
    });
  });
});
