// The etcdkit command from its arguments to its exit status.
import { Etcd, EtcdError } from '@etcdkit/client';
import { type Invocation, parseInvocation } from './args.js';
import { leadershipHolder, observeLeaders } from './commands/elect.js';
import { lockHolder } from './commands/lock.js';
import { permitHolder } from './commands/semaphore.js';
import { etcdOptions } from './connection-flags.js';
import { CliError } from './errors.js';
import { EXIT_STATUS } from './exit-status.js';
import { type HoldContext, holdOnce, type RoundEnd } from './hold-command.js';
import { Interrupts } from './interrupts.js';
import type { Io } from './io.js';
import { usage } from './usage.js';

/** Pause between two campaigns of `elect --restart`, so a CMD that fails at once does not spin. */
const RESTART_PAUSE_MS = 500;

const PROCESS_IO: Io = {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
};

/**
 * Runs the etcdkit command with `argv` (the arguments after the command name) and resolves with
 * the status to exit with (see {@link EXIT_STATUS}). While it runs, SIGINT, SIGTERM and SIGHUP to
 * this process are handled by it: passed on to CMD, or ending the wait.
 */
export async function runEtcdkit(
  argv: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
  io: Io = PROCESS_IO,
): Promise<number> {
  let invocation: Invocation;
  try {
    invocation = parseInvocation(argv, env);
  } catch (error) {
    return report(io, error);
  }
  if (invocation.kind === 'help') {
    io.stdout(usage(invocation.topic));
    return EXIT_STATUS.ok;
  }
  using interrupts = new Interrupts();
  let etcd: Etcd | undefined;
  try {
    etcd = new Etcd(etcdOptions(invocation.connection));
    return await dispatch(invocation, {
      etcd,
      io,
      interrupts,
      flags: invocation.hold,
      command: invocation.command,
    });
  } catch (error) {
    return report(io, error);
  } finally {
    await etcd?.close();
  }
}

async function dispatch(
  invocation: Exclude<Invocation, { kind: 'help' }>,
  context: HoldContext,
): Promise<number> {
  switch (invocation.kind) {
    case 'lock':
      return (await holdOnce(context, lockHolder(invocation.name))).status;
    case 'semaphore':
      return (await holdOnce(context, permitHolder(invocation.name, invocation.limit))).status;
    case 'elect': {
      if (invocation.listen) {
        const { etcd, io, interrupts } = context;
        return await observeLeaders(etcd, invocation.name, invocation.hold, io, interrupts);
      }
      const holder = leadershipHolder(invocation.name, invocation.value);
      if (!invocation.restart) return (await holdOnce(context, holder)).status;
      return await campaignForEver(context, () => holdOnce(context, holder));
    }
  }
}

/**
 * `elect --restart`: campaigns again after CMD exits or the leadership is lost, until a signal.
 * etcd being unreachable is one more reason to try again, not to stop.
 */
async function campaignForEver(
  context: HoldContext,
  round: () => Promise<RoundEnd>,
): Promise<number> {
  const { interrupts, io } = context;
  for (;;) {
    try {
      const end = await round();
      if (end.reason === 'interrupted' || interrupts.signal.aborted) return end.status;
    } catch (error) {
      if (!(error instanceof EtcdError) || interrupts.signal.aborted) throw error;
      io.stderr(`etcdkit: ${error.message}; campaigning again\n`);
    }
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, RESTART_PAUSE_MS);
      interrupts.signal.addEventListener(
        'abort',
        () => {
          clearTimeout(timer);
          resolve();
        },
        { once: true },
      );
    });
    if (interrupts.signal.aborted) return EXIT_STATUS.ok;
  }
}

/** Writes the error and returns its status. */
function report(io: Io, error: unknown): number {
  if (error instanceof CliError) {
    io.stderr(`etcdkit: ${error.message}\n`);
    return error.exitStatus;
  }
  if (error instanceof EtcdError) {
    io.stderr(`etcdkit: ${error.message} (${error.code})\n`);
    return EXIT_STATUS.unavailable;
  }
  io.stderr(
    `etcdkit: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  return EXIT_STATUS.internal;
}
