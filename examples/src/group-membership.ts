// Group membership with a live view (Curator's GroupMember): who is in, with what value.
//
//   npm run example -- group-membership [--endpoints http://127.0.0.1:2379]
//
// A monitor watches the group `groups/workers` (one watch) and prints each join, change and leave
// and every whole view. Three workers join with their capacity; one changes it, one leaves, and
// one's lease is lost (its process "crashed"): the view follows each step, at its revision.
import { Group, type GroupMembers, Session } from '@etcdkit/recipes';
import { commandLine, connect, ENDPOINTS_FLAG } from './support.js';

const { etcd, server, close } = await connect(
  commandLine('group-membership', ENDPOINTS_FLAG).endpoints,
);
try {
  const group = new Group(etcd, 'groups/workers');
  const view = group.watch();
  view.on('join', (m) => console.log(`  join   ${m.id} = ${m.value}`));
  view.on('change', (m, before) => console.log(`  change ${m.id}: ${before.value} -> ${m.value}`));
  view.on('leave', (m) => console.log(`  leave  ${m.id}`));
  const views: string[] = [];
  const describe = ({ members, revision }: GroupMembers) =>
    `[${[...members.values()].map((m) => `${m.id}=${m.value}`).join(' ')}]@${revision}`;
  // Every view in order, as the iterator yields them, until the group is empty again.
  const followed = (async () => {
    for await (const members of view) {
      views.push(describe(members));
      console.log(`view ${describe(members)}`);
      if (views.length > 1 && members.members.size === 0) break;
    }
  })();

  // The first listing (the group is empty), then the workers join one after another.
  await new Promise((resolve) => view.once('view', resolve));
  const sessions: Session[] = [];
  const join = async (id: string, value: string) => {
    const session = await Session.create(etcd, { ttl: 10 });
    sessions.push(session);
    return { session, member: await group.join(session, id, value) };
  };
  const w1 = await join('worker-1', 'slots:2');
  const w2 = await join('worker-2', 'slots:4');
  const w3 = await join('worker-3', 'slots:6');
  await w2.member.set('slots:8');
  await w1.member.leave();
  // worker-3 crashes: its lease ends and its member key goes with it.
  if (server) server.faults.expireLease(w3.session.leaseId);
  else await etcd.lease.revoke(w3.session.leaseId);
  await w2.member.leave();
  await followed;
  for (const session of sessions) await session.close();

  const shown = views.map((v) => v.replace(/@\d+$/, '')).join(' ');
  const expected =
    '[] [worker-1=slots:2] [worker-1=slots:2 worker-2=slots:4] ' +
    '[worker-1=slots:2 worker-2=slots:4 worker-3=slots:6] ' +
    '[worker-1=slots:2 worker-2=slots:8 worker-3=slots:6] [worker-2=slots:8 worker-3=slots:6] ' +
    '[worker-2=slots:8] []';
  if (shown === expected) console.log('group-membership OK');
  else process.exitCode = 1;
} finally {
  await close();
}
