// Interop with etcd's own Go recipes through `etcdctl lock` and `etcdctl elect`: same keys, so the
// TypeScript and Go implementations exclude each other and agree on the leader.
import { Etcd } from '@etcdkit/client';
import { describeEachBackend } from '@etcdkit/testkit';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { Election } from '../src/election/election.js';
import { LockedError } from '../src/errors.js';
import { Mutex } from '../src/lock/mutex.js';
import { eventually, Fixture, rejection, stillPending } from './recipes-support.js';

describeEachBackend('interop with etcdctl', ({ backend, prefix }) => {
  const fixture = new Fixture(() => backend().endpoints);
  let admin: Etcd;
  beforeAll(() => {
    admin = new Etcd({ endpoints: backend().endpoints });
  });
  afterEach(() => fixture.close());
  afterAll(() => admin?.close());

  it('etcdctl lock holds: our Mutex is locked out until etcdctl unlocks', async () => {
    const name = `${prefix()}lock`;
    const etcdctl = fixture.etcdctl(['lock', name]);
    const [goKey] = await etcdctl.waitForLines(1);
    expect(goKey).toMatch(new RegExp(`^${name}/[0-9a-f]+$`));
    const mutex = new Mutex(await fixture.session(), name);
    const error = await rejection(mutex.tryLock());
    expect(error).toBeInstanceOf(LockedError);
    expect((error as LockedError).holderKey).toBe(goKey);
    const locking = mutex.lock();
    expect(await stillPending(locking, 500)).toBe(true);
    expect(await etcdctl.terminate()).toBe(0);
    const lock = await locking;
    expect(await admin.get(goKey!)).toBeUndefined();
    expect(lock.key).toBe(mutex.key);
    await lock.unlock();
  });

  it('our Mutex holds: etcdctl lock waits until we unlock, then holds', async () => {
    const name = `${prefix()}lock`;
    const mutex = new Mutex(await fixture.session(), name);
    const lock = await mutex.lock();
    const etcdctl = fixture.etcdctl(['lock', name]);
    await eventually(async () => (await admin.count({ prefix: `${name}/` })) === 2n);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(etcdctl.lines).toEqual([]);
    await lock.unlock();
    const [goKey] = await etcdctl.waitForLines(1);
    expect(goKey).not.toBe(lock.key);
    const error = await rejection(mutex.tryLock());
    expect((error as LockedError).holderKey).toBe(goKey);
    expect(await etcdctl.terminate()).toBe(0);
    expect(await admin.count({ prefix: `${name}/` })).toBe(0n);
  });

  it('etcdctl elect and our Election agree on the leader, both ways', async () => {
    const name = `${prefix()}election`;
    const ours = new Election(await fixture.session(), name);
    const leadership = await ours.campaign('ts-a');
    const goCandidate = fixture.etcdctl(['elect', name, 'go-b']);
    const observer = fixture.etcdctl(['elect', '-l', name]);
    expect(await observer.waitForLines(2)).toEqual([leadership.key, 'ts-a']);
    await eventually(async () => (await admin.count({ prefix: `${name}/` })) === 2n);
    expect(goCandidate.lines).toEqual([]);

    await leadership.resign();
    const [goKey, goValue] = await goCandidate.waitForLines(2);
    expect(goValue).toBe('go-b');
    const leader = await ours.leader();
    expect([leader.keyText(), leader.text()]).toEqual([goKey, 'go-b']);
    expect((await observer.waitForLines(4)).slice(2)).toEqual([goKey, 'go-b']);
    const controller = new AbortController();
    for await (const seen of ours.observe({ signal: controller.signal })) {
      expect([seen.keyText(), seen.text()]).toEqual([goKey, 'go-b']);
      break;
    }

    // Our next campaign waits for the Go leader, and wins once it resigns.
    const next = ours.campaign('ts-c');
    expect(await stillPending(next, 300)).toBe(true);
    expect(await goCandidate.terminate()).toBe(0);
    const again = await next;
    expect((await ours.leader()).text()).toBe('ts-c');
    expect((await observer.waitForLines(6)).slice(4)).toEqual([again.key, 'ts-c']);
    await again.resign();
    await observer.terminate();
  });
});
