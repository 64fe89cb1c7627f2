// LeaderLatch: Curator's latch over the Election recipe; the exact transitions of each latch, on
// close, on a deleted key (campaign again) and on a revoked lease (closed).
import { AbortedError } from '@etcdkit/client';
import { describeEachBackend } from '@etcdkit/testkit';
import { expect, it } from 'vitest';
import { LatchClosedError, LeaderLatch } from '../../src/election/leader-latch.js';
import { eventually, rejection, stillPending, suiteClients } from '../recipes-support.js';

/** Collects a latch's transitions until it closes. */
function record(latch: LeaderLatch): { states: string[]; ended: Promise<void> } {
  const states: string[] = [];
  const ended = (async () => {
    for await (const state of latch.transitions()) states.push(state);
    states.push('end');
  })();
  return { states, ended };
}

describeEachBackend('LeaderLatch', ({ backend, prefix }) => {
  const { fixture, admin } = suiteClients(() => backend().endpoints);

  it('hands leadership on in join order; close resigns and ends the transitions', async () => {
    const name = `${prefix()}latch`;
    const a = new LeaderLatch(await fixture.session(), name, { value: 'a' });
    const b = new LeaderLatch(await fixture.session(), name, { value: 'b' });
    const ra = record(a);
    const rb = record(b);
    expect(a.hasLeadership).toBe(false);
    a.start();
    const led = await a.leadership();
    expect(a.hasLeadership).toBe(true);
    expect(a.current).toBe(led);
    expect((await admin().get(led.key))?.text()).toBe('a');
    b.start();
    await eventually(async () => (await admin().get(b.election.key)) !== undefined);
    expect(b.hasLeadership).toBe(false);
    expect(await stillPending(b.leadership(), 200)).toBe(true);

    await a.close();
    expect(a.state).toBe('closed');
    expect(await admin().get(led.key)).toBeUndefined();
    const next = await b.leadership();
    expect(next.epoch).toBeGreaterThan(led.epoch);
    await ra.ended;
    expect(ra.states).toEqual(['not-leader', 'leader', 'not-leader', 'end']);
    await b.close();
    await rb.ended;
    expect(rb.states).toEqual(['not-leader', 'leader', 'not-leader', 'end']);
    const closed = await rejection(a.leadership());
    expect(closed).toBeInstanceOf(LatchClosedError);
    expect(closed).toMatchObject({ code: 'LATCH_CLOSED' });
  });

  it('campaigns again when its key is deleted while the session lives', async () => {
    const latch = new LeaderLatch(await fixture.session(), `${prefix()}latch`).start();
    const first = await latch.leadership();
    const { states } = record(latch);
    await admin().delete(first.key);
    await eventually(() => states.length === 3);
    expect(states).toEqual(['leader', 'not-leader', 'leader']);
    const second = await latch.leadership();
    expect(second.epoch).toBeGreaterThan(first.epoch);
    expect(latch.hasLeadership).toBe(true);
    await latch.close();
  });

  it('closes when its lease is revoked: not-leader, then closed, and never leads again', async () => {
    const name = `${prefix()}latch`;
    const session = await fixture.session();
    const latch = new LeaderLatch(session, name).start();
    const events: string[] = [];
    latch.on('leader', () => events.push('leader'));
    latch.on('notLeader', () => events.push('notLeader'));
    latch.on('closed', () => events.push('closed'));
    await latch.leadership();
    const { states, ended } = record(latch);
    const follower = new LeaderLatch(await fixture.session(), name).start();
    await eventually(async () => (await admin().get(follower.election.key)) !== undefined);

    await admin().lease.revoke(session.leaseId);
    await ended;
    expect(states).toEqual(['leader', 'not-leader', 'end']);
    expect(events).toEqual(['leader', 'notLeader', 'closed']);
    expect(latch.state).toBe('closed');
    expect(latch.closedReason).toBeInstanceOf(LatchClosedError);
    expect(await rejection(latch.leadership())).toBe(latch.closedReason);
    // The follower takes over; the closed latch left nothing behind.
    await follower.leadership();
    const keys = await admin().range({ prefix: `${name}/` });
    expect(keys.kvs.map((kv) => kv.keyText())).toEqual([follower.election.key]);
    await follower.close();
  });

  it('leadership() stops waiting when its signal aborts', async () => {
    const name = `${prefix()}latch`;
    const leader = new LeaderLatch(await fixture.session(), name).start();
    await leader.leadership();
    const waiter = new LeaderLatch(await fixture.session(), name).start();
    const error = await rejection(waiter.leadership({ signal: AbortSignal.timeout(100) }));
    expect(error).toBeInstanceOf(AbortedError);
    expect(waiter.state).toBe('not-leader');
    await waiter.close();
    await leader.close();
    expect((await admin().range({ prefix: `${name}/` })).kvs).toEqual([]);
  });

  it('transitions() ends with AbortedError when its signal aborts, as every iteration does', async () => {
    const latch = new LeaderLatch(await fixture.session(), `${prefix()}latch`).start();
    await latch.leadership();
    const controller = new AbortController();
    const states: string[] = [];
    const following = (async () => {
      for await (const state of latch.transitions({ signal: controller.signal })) {
        states.push(state);
        controller.abort();
      }
    })();
    expect(await rejection(following)).toBeInstanceOf(AbortedError);
    expect(states).toEqual(['leader']);
    expect(latch.state).toBe('leader');
    await latch.close();
  });
});
