// `etcdkit elect NAME [--value V] [--restart] -- CMD`: CMD runs only while this process leads the
// election NAME (Go's layout, shared with `etcdctl elect`); and etcdctl's forms without CMD:
// `elect NAME PROPOSAL` (campaign, print, hold) and `elect -l NAME` (print the leaders).
import { hostname } from 'node:os';
import { AbortedError, type Etcd } from '@etcdkit/client';
import { Election, type Leadership, Session } from '@etcdkit/recipes';
import type { HoldFlags } from '../args.js';
import { EXIT_STATUS } from '../exit-status.js';
import type { Holder } from '../hold-command.js';
import type { Interrupts } from '../interrupts.js';
import type { Io } from '../io.js';

/** Leadership of NAME, campaigning with `value` (the host name by default). */
export function leadershipHolder(name: string, value: string | undefined): Holder<Leadership> {
  const proposal = value ?? hostname();
  return {
    what: `leadership of ${name}`,
    acquire: (session, signal) => new Election(session, name).campaign(proposal, { signal }),
    value: (leadership) => leadership.value,
    env: (leadership) => ({
      ETCDKIT_ELECTION_VALUE: leadership.value,
      ETCDKIT_LEADER_EPOCH: String(leadership.epoch),
    }),
  };
}

/** `elect -l NAME`: prints each leader (key, then value) as it changes, until a signal. */
export async function observeLeaders(
  etcd: Etcd,
  name: string,
  flags: HoldFlags,
  io: Io,
  interrupts: Interrupts,
): Promise<number> {
  const session = await Session.create(etcd, { ttl: flags.ttlSeconds });
  try {
    for await (const leader of new Election(session, name).observe({
      signal: interrupts.signal,
    })) {
      io.stdout(`${leader.keyText()}\n${leader.text()}\n`);
    }
  } catch (error) {
    if (!(error instanceof AbortedError && interrupts.signal.aborted)) throw error;
    return EXIT_STATUS.ok;
  } finally {
    await session.close().catch(() => {});
  }
  if (interrupts.signal.aborted) return EXIT_STATUS.ok;
  io.stderr('Error: elect: observer lost\n');
  return EXIT_STATUS.unavailable;
}
