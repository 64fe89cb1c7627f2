import { describeEachBackend } from '@etcdkit/testkit';
import { expect, it } from 'vitest';
import {
  Group,
  GroupMemberExistsError,
  type GroupMembers,
  type GroupView,
} from '../../src/discovery/group.js';
import { LockLostError } from '../../src/errors.js';
import { eventually, rejection, suiteClients } from '../recipes-support.js';

/** The views a GroupView yields, as `id=value` lists, with their revisions. */
function follow(view: GroupView): { seen: GroupMembers[]; ended: Promise<void> } {
  const seen: GroupMembers[] = [];
  const ended = (async () => {
    for await (const members of view) seen.push(members);
  })();
  return { seen, ended };
}

const pairs = (view: GroupMembers) => [...view.members.values()].map((m) => `${m.id}=${m.value}`);

describeEachBackend('Group', ({ backend, prefix }) => {
  const { fixture, admin } = suiteClients(() => backend().endpoints);

  it('yields the exact sequence of views: join, change, leave, lease revoked', async () => {
    const name = `${prefix()}group`;
    const group = new Group(fixture.client(), name);
    const a = await fixture.session();
    const b = await fixture.session();
    const alpha = await group.join(a, 'alpha', 'v1');
    const view = group.watch();
    const events: string[] = [];
    view.on('join', (m) => events.push(`join ${m.id}=${m.value}`));
    view.on('change', (m, p) => events.push(`change ${m.id} ${p.value}->${m.value}`));
    view.on('leave', (m) => events.push(`leave ${m.id}`));
    const { seen, ended } = follow(view);
    const step = async (count: number) => eventually(() => seen.length === count);
    await step(1);
    const beta = await group.join(b, 'beta', 'w1');
    await step(2);
    const set = await alpha.set('v2');
    await step(3);
    await beta.leave();
    await step(4);
    await group.join(b, 'gamma', 'x');
    await step(5);
    const revoked = await admin().lease.revoke(a.leaseId);
    await step(6);
    await view.close();
    await ended;
    expect(seen.map(pairs)).toEqual([
      ['alpha=v1'],
      ['alpha=v1', 'beta=w1'],
      ['alpha=v2', 'beta=w1'],
      ['alpha=v2'],
      ['alpha=v2', 'gamma=x'],
      ['gamma=x'],
    ]);
    expect(seen[0]?.revision).toBeGreaterThanOrEqual(alpha.joinedAt);
    expect(seen[2]?.revision).toBe(set.revision);
    expect(seen[5]?.revision).toBe(revoked.header.revision);
    expect(seen[5]?.members.get('gamma')?.joinedAt).toBe(seen[4]?.revision);
    // The first listing announces the members already there as joins.
    expect(events).toEqual([
      'join alpha=v1',
      'join beta=w1',
      'change alpha v1->v2',
      'leave beta',
      'join gamma=x',
      'leave alpha',
    ]);
    expect(pairs(await group.members())).toEqual(['gamma=x']);
  });

  it('puts a member on its session lease; an id is one session’s, and a lost member is not written', async () => {
    const group = new Group(admin(), `${prefix()}group`);
    const a = await fixture.session();
    const b = await fixture.session();
    const member = await group.join(a, 'one', 'first');
    const kv = await admin().get(member.key);
    expect([kv?.text(), kv?.lease, kv?.createRevision]).toEqual([
      'first',
      a.leaseId,
      member.joinedAt,
    ]);
    const taken = await rejection(group.join(b, 'one', 'other'));
    expect(taken).toBeInstanceOf(GroupMemberExistsError);
    expect((await admin().get(member.key))?.text()).toBe('first');
    // The same session joining again sets its value on the same key.
    const again = await group.join(a, 'one', 'second');
    expect(again.joinedAt).toBe(member.joinedAt);
    expect((await admin().get(member.key))?.text()).toBe('second');
    await admin().delete(member.key);
    expect(await rejection(member.set('late'))).toBeInstanceOf(LockLostError);
    expect(await admin().get(member.key)).toBeUndefined();
    await member.leave();
  });
});
