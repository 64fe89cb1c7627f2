// The flow every command shares: a session, the hold (lock, leadership or permit), then CMD under
// its watchdog until it exits or the hold is lost; or, without CMD, etcdctl's behaviour: print the
// held key and its value, keep it until SIGINT or SIGTERM.
import { AbortedError, type Etcd } from '@etcdkit/client';
import { type Hold, LockedError, Session } from '@etcdkit/recipes';
import type { HoldFlags } from './args.js';
import { CliError, usageError } from './errors.js';
import { EXIT_STATUS, signalStatus } from './exit-status.js';
import type { Interrupts } from './interrupts.js';
import type { Io } from './io.js';
import { monotonicNow } from './kill-deadline.js';
import { LeaseDeadline } from './lease-deadline.js';
import { SupervisedCommand } from './supervised-command.js';

/** What one command holds, and what CMD learns of it. */
export interface Holder<H extends Hold> {
  /** `lock NAME`, `leadership of NAME`...: for messages. */
  readonly what: string;
  acquire(session: Session, signal: AbortSignal): Promise<H>;
  /** Holds only if free now, else fails with LockedError: `--wait-timeout 0`. */
  readonly tryAcquire?: (session: Session) => Promise<H>;
  /** The held key's value, printed without CMD as etcdctl prints it. */
  value(hold: H): string;
  /** Variables of CMD's environment beyond the common ones. */
  env(hold: H): Record<string, string>;
}

/** Everything a round needs. */
export interface HoldContext {
  readonly etcd: Etcd;
  readonly io: Io;
  readonly interrupts: Interrupts;
  readonly flags: HoldFlags;
  readonly command: readonly string[];
}

/** How one round ended: the status to exit with, and why. */
export interface RoundEnd {
  readonly status: number;
  /** `interrupted`: a signal ended it; `lost`: the hold was lost; `done`: CMD exited. */
  readonly reason: 'interrupted' | 'lost' | 'done';
}

/** Takes a session and the hold, runs CMD (or waits, without one), releases. */
export async function holdOnce<H extends Hold>(
  context: HoldContext,
  holder: Holder<H>,
): Promise<RoundEnd> {
  const { etcd, io, interrupts, flags } = context;
  const grantSentAt = monotonicNow();
  const session = await Session.create(etcd, { ttl: flags.ttlSeconds });
  const deadline = new LeaseDeadline(session, grantSentAt);
  try {
    const hold = await acquire(context, holder, session);
    if (hold === undefined) {
      return { status: signalStatus(interrupts.received ?? 'SIGTERM'), reason: 'interrupted' };
    }
    if (context.command.length === 0) return await holdUntilSignal(io, interrupts, holder, hold);
    return await runCommand(context, holder, hold, session, deadline);
  } finally {
    deadline.close();
    // Revoking the lease releases the hold in one revision; a lease already gone is no error.
    await session.close().catch(() => {});
  }
}

/** The hold, or undefined when a signal ended the wait; a wait timeout throws a CliError. */
async function acquire<H extends Hold>(
  context: HoldContext,
  holder: Holder<H>,
  session: Session,
): Promise<H | undefined> {
  const { interrupts, flags } = context;
  if (flags.waitTimeoutMs === 0) return tryAcquire(holder, session);
  const timeout =
    flags.waitTimeoutMs === undefined ? undefined : AbortSignal.timeout(flags.waitTimeoutMs);
  const signal =
    timeout === undefined ? interrupts.signal : AbortSignal.any([interrupts.signal, timeout]);
  try {
    return await holder.acquire(session, signal);
  } catch (error) {
    if (!(error instanceof AbortedError)) throw error;
    if (interrupts.signal.aborted) return undefined;
    if (timeout?.aborted) {
      throw new CliError(
        'WAIT_TIMEOUT',
        `the ${holder.what} was not held within --wait-timeout ${flags.waitTimeoutMs! / 1000}s`,
      );
    }
    throw error;
  }
}

/** `--wait-timeout 0`: the hold if it is free now; a CliError if someone else has it. */
async function tryAcquire<H extends Hold>(holder: Holder<H>, session: Session): Promise<H> {
  if (holder.tryAcquire === undefined) {
    throw usageError(`--wait-timeout 0: the ${holder.what} cannot be tried without waiting`);
  }
  try {
    return await holder.tryAcquire(session);
  } catch (error) {
    if (!(error instanceof LockedError)) throw error;
    throw new CliError('WAIT_TIMEOUT', `the ${holder.what} is held by another (--wait-timeout 0)`, {
      cause: error,
    });
  }
}

/** etcdctl without a command: print the key and value, hold until a signal or a loss. */
async function holdUntilSignal<H extends Hold>(
  io: Io,
  interrupts: Interrupts,
  holder: Holder<H>,
  hold: H,
): Promise<RoundEnd> {
  io.stdout(`${hold.key}\n${holder.value(hold)}\n`);
  await new Promise<void>((resolve) => {
    if (interrupts.signal.aborted || hold.signal.aborted) resolve();
    interrupts.signal.addEventListener('abort', () => resolve(), { once: true });
    hold.signal.addEventListener('abort', () => resolve(), { once: true });
  });
  if (interrupts.signal.aborted) return { status: EXIT_STATUS.ok, reason: 'interrupted' };
  // etcdctl's words.
  io.stderr('Error: session expired\n');
  return { status: EXIT_STATUS.lost, reason: 'lost' };
}

async function runCommand<H extends Hold>(
  context: HoldContext,
  holder: Holder<H>,
  hold: H,
  session: Session,
  deadline: LeaseDeadline,
): Promise<RoundEnd> {
  const { io, interrupts, flags } = context;
  const env = {
    ...definedVariables(process.env),
    ETCDKIT_KEY: hold.key,
    ETCDKIT_FENCING_TOKEN: String(hold.fencingToken),
    ETCDKIT_LEASE_ID: session.leaseId.toString(16),
    ...holder.env(hold),
  };
  if (hold.signal.aborted) return lost(io, holder, 'before CMD started');
  const command = await SupervisedCommand.start(context.command, env, flags.killGraceMs, deadline);
  const stopForwarding = interrupts.each((signal) => command.signal(signal));
  // A signal that came while CMD was starting is passed on now.
  if (interrupts.received !== undefined) command.signal(interrupts.received);
  const onLoss = (): void => command.stop();
  hold.signal.addEventListener('abort', onLoss, { once: true });
  if (hold.signal.aborted) command.stop();
  try {
    const end = await command.ended();
    if (end.kind === 'expired') {
      return lost(io, holder, 'its lease could not be confirmed in time; CMD was stopped');
    }
    if (end.kind === 'stopped') return lost(io, holder, 'CMD was stopped');
    const status = end.code ?? signalStatus(end.signal ?? 'SIGKILL');
    return { status, reason: interrupts.received === undefined ? 'done' : 'interrupted' };
  } finally {
    stopForwarding();
    hold.signal.removeEventListener('abort', onLoss);
  }
}

function lost<H extends Hold>(io: Io, holder: Holder<H>, what: string): RoundEnd {
  io.stderr(`etcdkit: the ${holder.what} was lost: ${what}\n`);
  return { status: EXIT_STATUS.lost, reason: 'lost' };
}

function definedVariables(env: NodeJS.ProcessEnv): Record<string, string> {
  const defined: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) if (value !== undefined) defined[name] = value;
  return defined;
}
