// The README's demo: `npm start` (embedded server) or `npm start -- --endpoints http://127.0.0.1:2379`
// (a real etcd). It ends by itself in a few seconds with a summary and exit code 0, or exit code 1
// if what it shows did not happen. Anything else fails in one line on stderr: an unknown flag or a
// flag without its value (exit code 2), an endpoint not reached within the dial timeout or any
// other error (exit code 1).
//
// Act 1, a lock that protects something: three workers take turns on a Mutex and add to a ledger
// kept in etcd as a FencedResource. In the middle of its critical section one worker "pauses" (think
// of a long GC pause) and its lease is expired from outside (the embedded server's fault injector, or
// a revoke from another client on a real etcd). Another worker gets the lock and writes with a
// higher fencing token; when the paused worker wakes up, still believing it holds the lock, the
// ledger REJECTS its stale token and its guarded txn applies nothing.
//
// Act 2, failover: three candidates campaign in an Election; the leader does leader-only work (a
// heartbeat written by a txn guarded by its leadership). The leader is killed (its lease expired
// from outside) and the next candidate takes over; the old leader's heartbeat is rejected.
import { Etcd, op } from '@etcdkit/client';
import {
  Election,
  FencedResource,
  type Leadership,
  LeadershipLostError,
  LockLostError,
  Mutex,
  Session,
  StaleFencingTokenError,
} from '@etcdkit/recipes';
import { EmbeddedEtcd } from '@etcdkit/server-embedded';
import {
  ENDPOINTS_FLAG,
  ExampleError,
  endpointList,
  parseFlags,
  sleep,
  Timeline,
} from './support.js';

const WORKERS = 3;
const ROUNDS = 3;
const PAUSED_WORKER = 'worker-2';
/** How long to wait for the first connection to `--endpoints` before giving up. */
const DIAL_TIMEOUT_MS = 5_000;

/** Fails within the dial timeout, naming the endpoints, when no endpoint answers. */
async function checkReachable(etcd: Etcd, endpoints: readonly string[]): Promise<void> {
  try {
    await etcd.get('demo/reachable', { timeoutMs: DIAL_TIMEOUT_MS });
  } catch (error) {
    throw new ExampleError(
      // The client's message names the call, its deadline and the endpoint it was connecting to.
      `cannot reach etcd at ${endpoints.join(', ')}: ${(error as Error).message}`,
    );
  }
}

interface Ledger {
  accepted: number;
  rejected: number;
  highestToken: bigint;
}

async function main(): Promise<void> {
  const flags = parseFlags('demo', process.argv.slice(2), ENDPOINTS_FLAG);
  const given = flags.endpoints === undefined ? undefined : endpointList(flags.endpoints);
  const server = given ? undefined : await EmbeddedEtcd.start();
  const endpoints = given ?? [...(server?.endpoints ?? [])];
  const timeline = new Timeline();

  // Expiring a lease "from outside": the embedded server's fault injector expires it as if its TTL
  // had run out; against a real etcd another client revokes it, which deletes its keys the same way.
  const outside = new Etcd({ endpoints, dialTimeoutMs: DIAL_TIMEOUT_MS });
  const how = server ? 'expired (fault injection)' : 'revoked by another client';
  const expire = async (leaseId: bigint): Promise<void> => {
    if (server) server.faults.expireLease(leaseId);
    else await outside.lease.revoke(leaseId);
  };

  const root = `demo/${process.pid}`;
  const etcd = new Etcd({ endpoints, dialTimeoutMs: DIAL_TIMEOUT_MS });
  const ledger: Ledger = { accepted: 0, rejected: 0, highestToken: 0n };
  let guardedRejected = false;
  const leaders: string[] = [];
  let heartbeatRejected = false;
  let failoverMs = Number.NaN;
  let reached = false;
  try {
    await checkReachable(etcd, endpoints);
    reached = true;
    console.log(
      `etcdkit demo against ${given ? 'etcd at' : 'the embedded server at'} ${endpoints.join(', ')}\n`,
    );
    timeline.header();

    // ---- Act 1: a lock with fencing ----
    timeline.section('act 1: three workers, one Mutex, a fenced ledger');
    const resource = new FencedResource(etcd, `${root}/ledger`);

    const worker = async (name: string): Promise<void> => {
      let session = await Session.create(etcd, { ttl: 10 });
      try {
        for (let round = 1; round <= ROUNDS; round++) {
          const lock = await new Mutex(session, `${root}/lock`).lock({
            signal: AbortSignal.timeout(10_000),
          });
          timeline.setHolder(name, lock.fencingToken);
          timeline.log(name, `acquired the lock, fencing token ${lock.fencingToken}`);
          const paused = name === PAUSED_WORKER && round === 2;
          if (paused) {
            timeline.log(name, 'pauses inside its critical section (a long GC pause)...');
            await expire(session.leaseId);
            timeline.setHolder(undefined);
            timeline.log(
              'fault',
              `lease ${session.leaseId.toString(16)} of ${name} ${how}: its lock key is gone`,
            );
            // Stay "paused" until another worker has written with a newer token.
            while (ledger.highestToken <= lock.fencingToken) await sleep(5);
            timeline.log(name, `wakes up, still believing it holds token ${lock.fencingToken}`);
          }
          await writeLedger(resource, ledger, timeline, name, lock.fencingToken);
          if (paused) {
            try {
              await lock
                .txn()
                .then(op.put(`${root}/audit`, name))
                .commit();
            } catch (error) {
              if (!(error instanceof LockLostError)) throw error;
              guardedRejected = true;
              timeline.log(name, 'its guarded txn (lock.txn()) is REJECTED too: the lock is lost');
            }
            // lock.signal fired when the key went: a careful worker checks it (the fence does not
            // rely on that). The session is over; the worker starts a new one and queues again.
            await session.close();
            session = await Session.create(etcd, { ttl: 10 });
            timeline.log(name, 'opens a new session and queues again');
            continue;
          }
          await sleep(30); // the critical section's work
          timeline.setHolder(undefined);
          await lock.unlock();
          timeline.log(name, `released token ${lock.fencingToken}`);
        }
      } finally {
        await session.close();
      }
    };
    await Promise.all(Array.from({ length: WORKERS }, (_, i) => worker(`worker-${i + 1}`)));
    const final = await resource.read();

    // ---- Act 2: leader election and failover ----
    timeline.section('act 2: three candidates, one Election, the leader is killed');
    const electionName = `${root}/election`;
    const candidates = await Promise.all(
      ['node-a', 'node-b', 'node-c'].map(async (name) => {
        const session = await Session.create(etcd, { ttl: 10 });
        return { name, session, election: new Election(session, electionName) };
      }),
    );
    const won = new Map<string, Leadership>();
    const campaign = async ({ name, election }: (typeof candidates)[number]): Promise<void> => {
      const leadership = await election.campaign(name, { signal: AbortSignal.timeout(10_000) });
      won.set(name, leadership);
      timeline.setLeader(name);
      leaders.push(name);
      timeline.log(name, `is the leader (epoch ${leadership.epoch})`);
    };
    // Candidates queue in the order they campaign: node-a first, then node-b, then node-c.
    const campaigns: Promise<void>[] = [];
    for (const candidate of candidates) {
      campaigns.push(campaign(candidate));
      while ((await etcd.get(candidate.election.key)) === undefined) await sleep(2);
      if (campaigns.length > 1) timeline.log(candidate.name, 'campaigns and waits in line');
    }
    const first = candidates[0];
    if (!first) throw new Error('no candidates');
    while (!won.has(first.name)) await sleep(2);
    const leadership = won.get(first.name);
    if (!leadership) throw new Error(`${first.name} did not win`);
    for (let beat = 1; beat <= 2; beat++) {
      await heartbeat(leadership, `${root}/heartbeat`, first.name, beat);
      timeline.log(first.name, `leader-only work: heartbeat ${beat}`);
      await sleep(20);
    }

    const killedAt = performance.now();
    await expire(first.session.leaseId);
    timeline.setLeader(undefined);
    timeline.log('fault', `lease of ${first.name} ${how}: the leader is dead`);
    while (leaders.length < 2) await sleep(2);
    failoverMs = performance.now() - killedAt;
    timeline.log(leaders[1] ?? '?', `took over ${failoverMs.toFixed(0)} ms after the kill`);
    try {
      await heartbeat(leadership, `${root}/heartbeat`, first.name, 3);
    } catch (error) {
      if (!(error instanceof LeadershipLostError)) throw error;
      heartbeatRejected = true;
      timeline.log(first.name, 'heartbeat 3 is REJECTED: its leadership is lost');
    }

    // The new leader resigns gracefully; the last candidate takes over at once.
    const second = won.get(leaders[1] ?? '');
    timeline.log(leaders[1] ?? '?', 'resigns gracefully');
    await second?.resign();
    while (leaders.length < 3) await sleep(2);
    await Promise.all(campaigns);
    for (const { session } of candidates) await session.close();
    timeline.setLeader(undefined);

    // ---- Summary ----
    const value = Number(final.kv?.text() ?? '0');
    const failoverOk = leaders.join(' -> ') === 'node-a -> node-b -> node-c';
    console.log('\nsummary');
    console.log(`  ledger value            ${value} (accepted writes: ${ledger.accepted})`);
    console.log(
      `  stale writes rejected   ${ledger.rejected} by the fenced ledger, ${guardedRejected ? 1 : 0} by the guarded txn`,
    );
    console.log(`  highest fencing token   ${final.highestToken}`);
    console.log(`  leaders in order        ${leaders.join(' -> ')}`);
    console.log(`  failover after the kill ${failoverMs.toFixed(0)} ms`);
    console.log(`  stale heartbeat         ${heartbeatRejected ? 'rejected' : 'ACCEPTED (wrong)'}`);
    const ok =
      value === ledger.accepted &&
      ledger.accepted === WORKERS * ROUNDS - 1 &&
      ledger.rejected === 1 &&
      guardedRejected &&
      heartbeatRejected &&
      failoverOk;
    console.log(ok ? '\ndemo OK' : '\ndemo FAILED: see the timeline');
    if (!ok) process.exitCode = 1;
  } finally {
    if (reached) await etcd.delete({ prefix: `${root}/` }).catch(() => {});
    await etcd.close();
    await outside.close();
    await server?.stop();
  }
}

/** Adds 1 to the ledger with `token`, and logs whether the ledger accepted or rejected it. */
async function writeLedger(
  resource: FencedResource,
  ledger: Ledger,
  timeline: Timeline,
  name: string,
  token: bigint,
): Promise<void> {
  try {
    const { value } = await resource.update(token, (kv) => String(Number(kv?.text() ?? '0') + 1));
    ledger.accepted++;
    if (token > ledger.highestToken) ledger.highestToken = token;
    timeline.log('ledger', `ACCEPTED ${name}'s write with token ${token}: value ${String(value)}`);
  } catch (error) {
    if (!(error instanceof StaleFencingTokenError)) throw error;
    ledger.rejected++;
    timeline.log(
      'ledger',
      `REJECTED ${name}'s write: token ${error.token} < highest accepted ${error.highestToken}`,
    );
  }
}

/** Leader-only work: a write that applies only while `leadership` is held. */
async function heartbeat(
  leadership: Leadership,
  key: string,
  name: string,
  beat: number,
): Promise<void> {
  await leadership
    .txn()
    .then(op.put(key, `${name} #${beat}`))
    .commit();
}

try {
  await main();
} catch (error) {
  const message = error instanceof Error ? error.message : String(error);
  console.error(`demo: ${message}`);
  process.exitCode = error instanceof ExampleError ? error.exitCode : 1;
}
