// WorkQueue: order, ack/nack, attempts and dead letters, claims that end with the session, and
// consumers killed at every step (sessions revoked or orphaned, processes killed with SIGKILL):
// etcd's history then shows every item left the queue exactly once, by an ack, and no ack was
// reported twice.
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { AbortedError, type Etcd, InvalidArgumentError, type WatchEvent } from '@etcdkit/client';
import { describeEachBackend } from '@etcdkit/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { SessionExpiredError } from '../../src/errors.js';
import { type WorkItem, WorkQueue } from '../../src/queue/work-queue.js';
import { ClaimLostError } from '../../src/queue/work-queue-errors.js';
import type { Session } from '../../src/session/session.js';
import { eventually, Fixture, rejection, sleep, stillPending } from '../recipes-support.js';

const ROOT = fileURLToPath(new URL('../../../..', import.meta.url));
const CONSUMER = fileURLToPath(new URL('./work-queue-consumer.ts', import.meta.url));

/** Where a killed consumer stops. */
const STEPS = ['claiming', 'claimed', 'working', 'acking', 'acked'] as const;
type Step = (typeof STEPS)[number];

describeEachBackend('WorkQueue', ({ backend, prefix }) => {
  const fixture = new Fixture(() => backend().endpoints);
  afterEach(() => fixture.close());
  const name = () => `${prefix()}jobs`;

  /** The keys left under the queue, relative to it. */
  async function keysLeft(etcd: Etcd): Promise<string[]> {
    const { kvs } = await etcd.range({ prefix: `${name()}/`, keysOnly: true });
    return kvs.map((kv) => kv.keyText().slice(name().length + 1));
  }

  it('serves by priority, then FIFO; an ack deletes the item and its bookkeeping', async () => {
    const etcd = fixture.client();
    const queue = new WorkQueue(etcd, name());
    await queue.enqueue('late, urgent', { priority: 1 });
    for (const job of ['first', 'second']) await queue.enqueue(job, { priority: 2 });
    await queue.enqueue('most urgent', { priority: 0 });
    const session = await fixture.session({ ttl: 10 });
    const seen: string[] = [];
    for (let i = 0; i < 4; i++) {
      const item = await queue.claim(session);
      expect(item.attempt).toBe(1);
      seen.push(`${item.priority}:${item.text()}`);
      await queue.ack(item);
    }
    expect(seen).toEqual(['0:most urgent', '1:late, urgent', '2:first', '2:second']);
    expect(await keysLeft(etcd)).toEqual([]);
  });

  it('claimed items are invisible to other consumers; claim waits for an item', async () => {
    const etcd = fixture.client();
    const queue = new WorkQueue(etcd, name());
    await queue.enqueue('only');
    const a = await fixture.session({ ttl: 10 });
    const b = await fixture.session({ ttl: 10 });
    const mine = await queue.claim(a);
    const waiting = queue.claim(b);
    expect(await stillPending(waiting, 200)).toBe(true);
    await queue.enqueue('next');
    expect((await waiting).text()).toBe('next');
    expect(mine.text()).toBe('only');
    const aborted = new AbortController();
    const idle = queue.claim(b, { signal: aborted.signal });
    aborted.abort('stop');
    expect(await rejection(idle)).toBeInstanceOf(AbortedError);
  });

  it('nack makes the item claimable again with its attempt incremented; then dead letters', async () => {
    const etcd = fixture.client();
    const queue = new WorkQueue(etcd, name(), { maxAttempts: 3 });
    const { id } = await queue.enqueue('flaky');
    const session = await fixture.session({ ttl: 10 });
    const attempts: number[] = [];
    for (let i = 0; i < 3; i++) {
      const item = await queue.claim(session);
      expect(item.id).toBe(id);
      attempts.push(item.attempt);
      await queue.nack(item);
    }
    expect(attempts).toEqual([1, 2, 3]);
    // The third nack was the last allowed attempt: the item is a dead letter now.
    const dead = await queue.deadLetters();
    expect(dead.map((d) => [d.id, d.text()])).toEqual([[id, 'flaky']]);
    expect(await keysLeft(etcd)).toEqual([`dead/${id}`]);
    expect(await stillPending(queue.claim(session), 200)).toBe(true);
  });

  it('an item whose last claim expired is dead-lettered by the next claim', async () => {
    const etcd = fixture.client();
    const queue = new WorkQueue(etcd, name(), { maxAttempts: 1 });
    const { id } = await queue.enqueue('poison');
    await queue.enqueue('fine');
    const crashing = await fixture.session({ ttl: 10 });
    expect((await queue.claim(crashing)).id).toBe(id);
    await crashing.close();
    const session = await fixture.session({ ttl: 10 });
    expect((await queue.claim(session)).text()).toBe('fine');
    expect((await queue.deadLetters()).map((d) => d.id)).toEqual([id]);
  });

  it('a revoked claim frees the item at once; the stale ack fails with ClaimLostError', async () => {
    const etcd = fixture.client();
    const queue = new WorkQueue(etcd, name());
    await queue.enqueue('job');
    const first = await fixture.session({ ttl: 10 });
    const stale = await queue.claim(first);
    await first.close();
    const second = await fixture.session({ ttl: 10 });
    const fresh = await queue.claim(second);
    expect([fresh.id, fresh.attempt]).toEqual([stale.id, 2]);
    const lost = await rejection(queue.ack(stale));
    expect(lost).toBeInstanceOf(ClaimLostError);
    expect(lost).toMatchObject({ code: 'CLAIM_LOST', id: stale.id });
    await queue.ack(fresh);
    // Acked once: a second ack of the same claim changes nothing.
    expect(await rejection(queue.ack(fresh))).toBeInstanceOf(ClaimLostError);
    expect(await rejection(queue.nack(fresh))).toBeInstanceOf(ClaimLostError);
    expect(await keysLeft(etcd)).toEqual([]);
  });

  it('an orphaned consumer loses its claim when its lease expires; a waiting consumer gets it', async () => {
    const etcd = fixture.client();
    const queue = new WorkQueue(etcd, name());
    await queue.enqueue('job');
    const crashed = await fixture.session({ ttl: 2 });
    const held = await queue.claim(crashed);
    crashed.orphan();
    const other = await fixture.session({ ttl: 10 });
    const redelivered = await queue.claim(other);
    expect([redelivered.id, redelivered.attempt]).toEqual([held.id, 2]);
  });

  it('claim fails with SessionExpiredError when the session ends while it waits', async () => {
    const etcd = fixture.client();
    const queue = new WorkQueue(etcd, name());
    const session = await fixture.session({ ttl: 10 });
    const waiting = rejection(queue.claim(session));
    await sleep(50);
    await session.close();
    expect(await waiting).toBeInstanceOf(SessionExpiredError);
  });

  it('rejects bad options', async () => {
    const etcd = fixture.client();
    expect(() => new WorkQueue(etcd, name(), { maxAttempts: 0 })).toThrow(InvalidArgumentError);
    const queue = new WorkQueue(etcd, name());
    expect(await rejection(queue.enqueue('x', { priority: 70_000 }))).toBeInstanceOf(
      InvalidArgumentError,
    );
    expect(await rejection(queue.ack({ id: 'x' } as WorkItem))).toBeInstanceOf(
      InvalidArgumentError,
    );
    expect(await rejection(queue.nack(undefined as unknown as WorkItem))).toBeInstanceOf(
      InvalidArgumentError,
    );
    expect(await keysLeft(etcd)).toEqual([]);
  });

  describe('consumers killed at every step lose no item and ack none twice', () => {
    const ITEMS = 80;
    const KILLS = 20;

    /** Acks reported to consumers, by item id. */
    type Acks = Map<string, bigint[]>;
    const report = (acks: Acks, id: string, revision: bigint) =>
      acks.set(id, [...(acks.get(id) ?? []), revision]);

    async function fill(queue: WorkQueue): Promise<string[]> {
      const ids: string[] = [];
      for (let i = 0; i < ITEMS; i++) ids.push((await queue.enqueue(`job ${i}`)).id);
      return ids;
    }

    /** A healthy consumer that acks until every item is gone. */
    async function drain(queue: WorkQueue, etcd: Etcd, acks: Acks): Promise<void> {
      const session = await fixture.session({ ttl: 10 }, etcd);
      const done = new AbortController();
      const watcher = (async () => {
        await eventually(
          async () => (await etcd.count({ prefix: `${name()}/items/` })) === 0n,
          30_000,
        );
        done.abort();
      })();
      try {
        for (;;) {
          let item: WorkItem;
          try {
            item = await queue.claim(session, { signal: done.signal });
          } catch (error) {
            if (error instanceof AbortedError && done.signal.aborted) break;
            throw error;
          }
          report(acks, item.id, (await queue.ack(item)).revision);
        }
      } finally {
        await watcher;
      }
    }

    /** Every event under the queue from `from` on, up to a sentinel put now. */
    async function history(etcd: Etcd, from: bigint): Promise<WatchEvent[]> {
      const end = (await etcd.put(`${name()}/~end`, '')).header.revision;
      const events: WatchEvent[] = [];
      const watcher = etcd.watch({ prefix: `${name()}/`, startRevision: from });
      for await (const batch of watcher) {
        events.push(...batch.events);
        if (events.some((e) => e.kv.modRevision >= end)) break;
      }
      await watcher.close();
      return events;
    }

    /**
     * Checks, from etcd's history, that each item left `items/` exactly once, by an ack (its claim
     * deleted in the same revision), that its claims counted 1, 2, 3..., and that no ack was
     * reported twice or at another revision. Returns how many deliveries were repeats.
     */
    function checkHistory(events: WatchEvent[], ids: string[], acks: Acks): number {
      const at = (type: WatchEvent['type'], key: string) =>
        events.filter((e) => e.type === type && e.kv.keyText() === `${name()}/${key}`);
      let repeats = 0;
      for (const id of ids) {
        const removed = at('delete', `items/${id}`).map((e) => e.kv.modRevision);
        expect(removed, `item ${id} left the queue once`).toHaveLength(1);
        const claimEnds = at('delete', `claims/${id}`).map((e) => e.kv.modRevision);
        expect(claimEnds, `item ${id} was removed by an ack`).toContain(removed[0]);
        const counts = at('put', `attempts/${id}`).map((e) => Number(e.kv.text()));
        expect(counts).toEqual(counts.map((_, i) => i + 1));
        repeats += counts.length - 1;
        const reported = acks.get(id) ?? [];
        expect(reported.length, `acks reported for ${id}`).toBeLessThanOrEqual(1);
        if (reported.length === 1) expect(reported[0]).toBe(removed[0]);
      }
      return repeats;
    }

    it(`${KILLS} sessions revoked or orphaned at each step`, async () => {
      const etcd = fixture.client();
      const queue = new WorkQueue(etcd, name(), { maxAttempts: 100 });
      const from = (await etcd.range({ key: name(), countOnly: true })).header.revision + 1n;
      const ids = await fill(queue);
      const acks: Acks = new Map();

      /** Acks `normal` items, then stops at `step` in the next one and is killed there. */
      async function doomed(step: Step, kill: (session: Session) => void, normal: number) {
        const session = await fixture.session({ ttl: 2 }, etcd);
        for (let i = 0; ; i++) {
          const last = i === normal;
          if (last && step === 'claiming') {
            const claim = queue.claim(session).catch(() => undefined);
            kill(session);
            await claim;
            return;
          }
          let item: WorkItem;
          try {
            item = await queue.claim(session);
          } catch (error) {
            // A keepalive starved on a loaded machine ended the session early: killed sooner.
            if (error instanceof SessionExpiredError) return;
            throw error;
          }
          if (last && step === 'claimed') return kill(session);
          await sleep(Math.random() * 5);
          if (last && step === 'working') return kill(session);
          const ack = queue.ack(item).then(
            (header) => report(acks, item.id, header.revision),
            (error: unknown) => {
              if (!(error instanceof ClaimLostError)) throw error;
            },
          );
          if (last && step === 'acking') {
            kill(session);
            return ack;
          }
          await ack;
          if (last && step === 'acked') return kill(session);
        }
      }

      const revoke = (session: Session) => void session.close();
      const orphan = (session: Session) => session.orphan();
      await Promise.all(
        Array.from({ length: KILLS }, (_, i) =>
          doomed(STEPS[i % STEPS.length]!, i % 4 === 3 ? orphan : revoke, i % 3),
        ),
      );
      await drain(queue, etcd, acks);
      const repeats = checkHistory(await history(etcd, from), ids, acks);
      // At least the kills at 'claimed' and 'working' left a claim that was never acked.
      expect(repeats).toBeGreaterThanOrEqual(8);
      expect(await keysLeft(etcd)).toEqual(['~end']);
    });

    it(`${KILLS} consumer processes killed with SIGKILL at each step`, async () => {
      const etcd = fixture.client();
      const queue = new WorkQueue(etcd, name(), { maxAttempts: 100 });
      const from = (await etcd.range({ key: name(), countOnly: true })).header.revision + 1n;
      const ids = await fill(queue);
      const acks: Acks = new Map();
      const endpoint = backend().endpoints[0]!;

      /** Starts a consumer process; resolves once it stopped at `step`, after killing it. */
      async function killedAt(step: Step, normal: number): Promise<void> {
        const child: ChildProcess = spawn(
          process.execPath,
          [
            '--conditions=etcdkit-source',
            '--import',
            'tsx',
            CONSUMER,
            endpoint,
            name(),
            step,
            String(normal),
          ],
          { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
        );
        let output = '';
        let stderr = '';
        child.stdout?.on('data', (chunk: Buffer) => {
          output += chunk.toString();
        });
        child.stderr?.on('data', (chunk: Buffer) => {
          stderr += chunk.toString();
        });
        const exited = new Promise((resolve) => child.once('exit', resolve));
        try {
          await eventually(() => {
            if (child.exitCode !== null) throw new Error(`consumer exited: ${stderr}`);
            return output.includes(`at ${step}\n`);
          }, 60_000);
        } finally {
          child.kill('SIGKILL');
          await exited;
        }
        for (const line of output.split('\n')) {
          const [word, id, revision] = line.split(' ');
          if (word === 'acked' && id && revision) report(acks, id, BigInt(revision));
        }
      }

      // Waves of one process per step, so the machine is not flooded with node processes.
      for (let wave = 0; wave < KILLS / STEPS.length; wave++) {
        await Promise.all(STEPS.map((step, i) => killedAt(step, (wave + i) % 3)));
      }
      await drain(queue, etcd, acks);
      const repeats = checkHistory(await history(etcd, from), ids, acks);
      expect(repeats).toBeGreaterThanOrEqual(8);
      expect(await keysLeft(etcd)).toEqual(['~end']);
    }, 240_000);
  });
});
