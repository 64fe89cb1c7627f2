// Recipe names: every recipe refuses an empty name and one ending in "/" (typed, naming the recipe
// and the argument, before anything is written), and valid names, Go's leading-"/" ones included,
// keep Go's key layouts.
import { type Etcd, InvalidArgumentError } from '@etcdkit/client';
import { describeEachBackend } from '@etcdkit/testkit';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { Barrier } from '../src/barrier/barrier.js';
import { DoubleBarrier } from '../src/barrier/double-barrier.js';
import { ServiceRegistry } from '../src/discovery/registry.js';
import { Election } from '../src/election/election.js';
import { Mutex } from '../src/lock/mutex.js';
import { RWMutex } from '../src/lock/rwmutex.js';
import { Semaphore } from '../src/lock/semaphore.js';
import { PriorityQueue } from '../src/queue/priority-queue.js';
import { Queue } from '../src/queue/queue.js';
import { WorkQueue } from '../src/queue/work-queue.js';
import type { Session } from '../src/session/session.js';
import { Fixture } from './recipes-support.js';

describeEachBackend('recipe names', ({ backend, prefix }) => {
  const fixture = new Fixture(() => backend().endpoints);
  let etcd: Etcd;
  let session: Session;

  beforeEach(async () => {
    etcd = fixture.client();
    session = await fixture.session({}, etcd);
  });
  afterEach(() => fixture.close());

  /** Each recipe's constructor, the argument that names it, and the name given to it. */
  const constructors = (): [string, string, (name: string) => unknown][] => [
    ['Mutex', 'name', (name) => new Mutex(session, name)],
    ['RWMutex', 'name', (name) => new RWMutex(session, name)],
    ['Semaphore', 'name', (name) => new Semaphore(session, name, 2)],
    ['Election', 'name', (name) => new Election(session, name)],
    ['Barrier', 'key', (name) => new Barrier(etcd, name)],
    ['DoubleBarrier', 'key', (name) => new DoubleBarrier(session, name, 2)],
    ['Queue', 'prefix', (name) => new Queue(etcd, name)],
    ['PriorityQueue', 'prefix', (name) => new PriorityQueue(etcd, name)],
    ['WorkQueue', 'prefix', (name) => new WorkQueue(etcd, name)],
  ];

  it('an empty name is refused with InvalidArgumentError naming the recipe and argument', () => {
    for (const [recipe, argument, make] of constructors()) {
      expect(() => make('')).toThrow(InvalidArgumentError);
      expect(() => make('')).toThrow(`${recipe}: ${argument} must be a non-empty string`);
      // From JavaScript, without the types: not a string at all.
      expect(() => make(undefined as unknown as string)).toThrow(
        `${recipe}: ${argument} must be a non-empty string`,
      );
    }
  });

  it('a name ending in "/" is refused: its keys would sit in an empty segment under the name', () => {
    for (const [recipe, argument, make] of constructors()) {
      for (const name of ['locks/a/', '/', '//']) {
        expect(() => make(name)).toThrow(InvalidArgumentError);
        expect(() => make(name)).toThrow(
          `${recipe}: ${argument} ${JSON.stringify(name)} must not end with "/"`,
        );
      }
    }
  });

  it('ServiceRegistry refuses the same service names, in register and discover, writing nothing', async () => {
    const registry = new ServiceRegistry(etcd);
    for (const service of ['', 'services/api/']) {
      const error = await registry.register(service, { addr: '10.0.0.1:80' }).catch((e) => e);
      expect(error).toBeInstanceOf(InvalidArgumentError);
      expect(String(error.message)).toMatch(/^ServiceRegistry: service /);
      expect(() => registry.discover(service)).toThrow(InvalidArgumentError);
    }
    await registry.close();
    expect((await etcd.range({ prefix: '' })).kvs.map((kv) => kv.keyText())).not.toContainEqual(
      expect.stringMatching(/^services\/api\//),
    );
  });

  it('valid names, a leading "/" as in Go programs included, keep the Go layouts', async () => {
    const root = `/${prefix()}names`;
    const keys = async (under: string) =>
      (await etcd.range({ prefix: under, keysOnly: true })).kvs.map((kv) => kv.keyText());
    const hex = session.leaseId.toString(16);

    const lock = await new Mutex(session, `${root}/mutex`).lock();
    expect(await keys(`${root}/mutex/`)).toEqual([`${root}/mutex/${hex}`]);
    await lock.unlock();

    const read = await new RWMutex(session, `${root}/rw`).readLock();
    expect(await keys(`${root}/rw/`)).toEqual([expect.stringMatching(/\/rw\/read\/\d+$/)]);
    await read.unlock();

    const permit = await new Semaphore(session, `${root}/sem`, 2).acquire();
    expect(await keys(`${root}/sem/`)).toEqual([expect.stringMatching(/\/sem\/\d+$/)]);
    await permit.release();

    const leadership = await new Election(session, `${root}/election`).campaign('me');
    expect(await keys(`${root}/election/`)).toEqual([`${root}/election/${hex}`]);
    await leadership.resign();

    expect(await new Barrier(etcd, `${root}/barrier`).hold()).toBe(true);
    expect(await keys(`${root}/barrier`)).toEqual([`${root}/barrier`]);

    await new DoubleBarrier(session, `${root}/double`, 1).enter();
    expect(await keys(`${root}/double/`)).toEqual([
      `${root}/double/ready`,
      expect.stringMatching(/\/double\/waiters\/\d+$/),
    ]);

    const queued = await new Queue(etcd, `${root}/queue`).enqueue('a');
    expect(queued.key).toMatch(new RegExp(`^${root}/queue/\\d+$`));
    const prioritised = await new PriorityQueue(etcd, `${root}/pq`).enqueue('a', 3);
    expect(prioritised.key).toMatch(new RegExp(`^${root}/pq/00003/\\d{16}$`));
    const work = await new WorkQueue(etcd, `${root}/work`).enqueue('a');
    expect(await keys(`${root}/work/`)).toEqual([`${root}/work/items/${work.id}`]);
  });
});
