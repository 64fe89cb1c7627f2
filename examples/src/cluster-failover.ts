// What a client does when members of its cluster fail, on a simulated 3-member cluster.
//
//   npm run example -- cluster-failover
//
// One client is given every member's endpoint and `requireLeader: true`. It keeps a watch open on
// a prefix and writes a counter, while the example stops the member that leads (the others elect
// a new leader in a new term), then cuts the member the client talks to off from the others (it
// answers "no leader"; the client moves to another member), then takes a quorum away (nobody can
// write) and gives it back. Writes are guarded txns, safe to retry. At the end the watch has seen
// every write exactly once, in order.
// The cluster is the embedded server's EmbeddedCluster: no real etcd is needed (and none is
// used: stopping and partitioning members of a real cluster needs more than a flag).
import { cmp, Etcd, op } from '@etcdkit/client';
import { EmbeddedCluster, type EmbeddedClusterMember } from '@etcdkit/server-embedded';
import { commandLine } from './support.js';

if (process.argv.some((arg) => arg.startsWith('--endpoints'))) {
  console.error(
    'cluster-failover runs on a simulated cluster of its own: --endpoints is not taken',
  );
  process.exit(2);
}
commandLine('cluster-failover', {});
const cluster = await EmbeddedCluster.start({ members: 3, requestTimeoutMs: 1_000 });
const etcd = new Etcd({ endpoints: [...cluster.endpoints], requireLeader: true });
const nameOf = (endpoint: string | undefined): string =>
  cluster.members.find((m) => new URL(m.endpoint).host === endpoint)?.name ?? '?';
const say = (event: string): void => {
  const leader = cluster.leader?.name ?? 'none';
  const using = nameOf(etcd.connection.currentEndpoint);
  console.log(`[term ${cluster.term}, leader ${leader.padEnd(7)}, client on ${using}] ${event}`);
};

let written = 0;
const seen: number[] = [];
const watcher = etcd.watch({ prefix: 'counter/' });
watcher.on('put', (event) => seen.push(Number(event.kv.text())));
// Each write creates its own key in a txn guarded by "the key does not exist yet", which the client
// may safely send again when an attempt's outcome is unknown (a member stopped under it): a retry
// of a write that did apply fails its compare instead of writing twice.
const write = async (): Promise<void> => {
  written++;
  const key = `counter/${String(written).padStart(3, '0')}`;
  await etcd
    .txn()
    .if(cmp.version(key, '==', 0n))
    .then(op.put(key, String(written)))
    .commit({ retry: 'guarded' });
};

try {
  await watcher.ready();
  for (let i = 0; i < 3; i++) await write();
  say(`wrote 1..${written}`);

  const first = cluster.leader as EmbeddedClusterMember;
  await first.stop();
  say(`stopped ${first.name}, the leader: a new leader in a new term`);
  for (let i = 0; i < 3; i++) await write();
  say(`wrote up to ${written}: the client moved on`);
  await first.start();
  say(`restarted ${first.name}: it follows the new leader`);

  const used = memberUsed();
  used.partition();
  say(`partitioned ${used.name}, the member the client used: it answers "no leader"`);
  for (let i = 0; i < 3; i++) await write();
  say(`wrote up to ${written}: the client moved to a member with a leader`);

  // One more member down: the one left cannot reach a quorum, so no write can succeed.
  const other = cluster.members.find((m) => m.reachable && m !== memberUsed());
  if (other === undefined) throw new Error('expected two reachable members');
  await other.stop();
  say(`stopped ${other.name}: no quorum, no leader`);
  // Every member refuses it ("no leader") until its deadline: DeadlineExceededError, nothing
  // applied. If the deadline falls while an attempt is on the wire, the client cannot know, and
  // says so (OutcomeUnknownError): that attempt may still land once a leader is back.
  const refused: string = await etcd.put('outage/attempt', 'x', { timeoutMs: 1_500 }).then(
    () => 'applied',
    (error: Error) => error.name,
  );
  say(`a write without a quorum fails: ${refused}`);
  used.heal();
  say(`healed ${used.name}: a quorum again`);
  for (let i = 0; i < 3; i++) await write();
  say(`wrote up to ${written}`);
  await other.start();
  say(`restarted ${other.name}: all three members are back`);

  await waitFor(() => seen.length >= written);
  const expected = Array.from({ length: written }, (_, i) => i + 1);
  const exact = JSON.stringify(seen) === JSON.stringify(expected);
  console.log(`the watch saw ${seen.length} writes: ${exact ? 'each once, in order' : seen}`);
  const attempt = await etcd.get('outage/attempt');
  // Only an outcome-unknown write may have landed; a refused one (deadline) never does.
  const honest =
    refused === 'OutcomeUnknownError' || (refused === 'DeadlineExceededError' && !attempt);
  console.log(`the write made without a quorum: ${refused}, applied: ${attempt !== undefined}`);
  if (!exact || !honest) process.exitCode = 1;
  else console.log('cluster-failover OK');
} finally {
  await watcher.close();
  await etcd.close();
  await cluster.stop();
}

/** The member the client talks to now. */
function memberUsed(): EmbeddedClusterMember {
  const member = cluster.members.find(
    (m) => new URL(m.endpoint).host === etcd.connection.currentEndpoint,
  );
  if (member === undefined) throw new Error('the client uses no member of the cluster');
  return member;
}

async function waitFor(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !condition(); i++) {
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
