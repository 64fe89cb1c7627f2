// The election workload: candidates campaign, proclaim as leader and resign; observers read the
// leader. Each session's lease is short, so faults that stall a member can end a leadership.
import { Etcd } from '@etcdkit/client';
import { Election, type Leadership, Session } from '@etcdkit/recipes';
import type { ElectionInput, ElectionOutput } from '../models/election.js';
import { classifyFailure, Recorder } from '../recorder.js';
import type { Target } from '../target.js';
import type { WorkloadRun } from './kv-workloads.js';
import { type FaultSchedule, ProcessIds, type RunLimits, runWithFaults, sleep } from './runner.js';

/** Options of {@link electionWorkload}. */
export interface ElectionWorkloadOptions extends RunLimits, FaultSchedule {
  readonly prefix: string;
  /** Sessions' lease TTL, in seconds. Default 2. */
  readonly ttlSeconds?: number;
}

/**
 * Runs `clients` clients: even ones campaign (then proclaim twice and resign), odd ones read the
 * leader. Values are unique, so a read tells which campaign or proclaim it saw.
 */
export async function electionWorkload(
  target: Target,
  options: ElectionWorkloadOptions,
): Promise<WorkloadRun<ElectionInput, ElectionOutput>> {
  const recorder = new Recorder<ElectionInput, ElectionOutput>();
  const ids = new ProcessIds();
  const name = `${options.prefix}election`;
  let n = 0;
  const faults = await runWithFaults(target, options, options, async (index, signal) => {
    const etcd = new Etcd({
      endpoints: [...target.endpoints],
      callTimeoutMs: 2_000,
      dialTimeoutMs: 1_000,
    });
    let process = ids.fresh();
    let session: Session | undefined;
    const record = (
      input: ElectionInput,
      effect: 'read' | 'write',
      run: () => Promise<ElectionOutput>,
    ) =>
      recorder.run(process, input, effect, run, (error) =>
        (error as { code?: string }).code === 'ELECTION_NOT_LEADER'
          ? 'fail'
          : classifyFailure(error, effect),
      );
    const ttl = options.ttlSeconds ?? 2;
    try {
      while (!signal.aborted) {
        try {
          if (session === undefined || session.isDone)
            session = await Session.create(etcd, { ttl });
        } catch {
          await sleep(50);
          continue;
        }
        const election = new Election(session, name);
        if (index % 2 === 1) {
          await record({ type: 'leader' }, 'read', async () => {
            try {
              const kv = await election.leader();
              return { type: 'leader', leader: { epoch: kv.createRevision, value: kv.text() } };
            } catch (error) {
              if ((error as { code?: string }).code !== 'ELECTION_NO_LEADER') throw error;
              return { type: 'leader', leader: undefined };
            }
          }).catch(() => {});
          await sleep(20);
          continue;
        }
        const value = `${index}.${n++}`;
        let won: Leadership | undefined;
        try {
          await record({ type: 'campaign', value }, 'write', async () => {
            won = await election.campaign(value, {
              signal: AbortSignal.any([signal, AbortSignal.timeout(5_000)]),
            });
            return { type: 'campaign', epoch: won.epoch };
          });
          const epoch = won!.epoch;
          for (let k = 0; k < 2; k++) {
            const proclaimed = `${value}/${k}`;
            await record({ type: 'proclaim', epoch, value: proclaimed }, 'write', async () => {
              await won!.proclaim(proclaimed);
              return { type: 'done' };
            });
            await sleep(30);
          }
          await record({ type: 'resign', epoch }, 'write', async () => {
            await won!.resign();
            return { type: 'done' };
          });
        } catch (error) {
          if (classifyFailure(error, 'write') === 'unknown') {
            // The campaign's key may be there still: end the session so it goes too.
            await session.close().catch(() => {});
            session = undefined;
            process = ids.fresh();
          }
          await sleep(50);
        }
      }
    } finally {
      await session?.close().catch(() => {});
      await etcd.close();
    }
  });
  return { history: recorder.history(), faults };
}
