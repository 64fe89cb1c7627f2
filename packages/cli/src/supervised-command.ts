// CMD, run through a watchdog process (see watchdog/main.ts) that the supervisor feeds with kill
// deadlines: a stalled supervisor cannot keep CMD alive past its lease.
import { type ChildProcess, fork } from 'node:child_process';
import { CliError } from './errors.js';
import type { LeaseDeadline } from './lease-deadline.js';
import type { FromWatchdog, ToWatchdog } from './watchdog/protocol.js';

/** How CMD ended. */
export type CommandEnd =
  /** CMD exited by itself or on a passed-on signal. */
  | {
      readonly kind: 'exited';
      readonly code: number | null;
      readonly signal: NodeJS.Signals | null;
    }
  /** The watchdog stopped CMD: no fresh keepalive was confirmed in time. */
  | { readonly kind: 'expired' }
  /** The supervisor stopped CMD because the hold was lost. */
  | { readonly kind: 'stopped' };

/** What stopped CMD, if anything did: told by the watchdog or set by `stop()`. */
interface EndState {
  expired: boolean;
  stopped: boolean;
}

/** Where the watchdog's script is: next to this module, as TypeScript when run from source. */
function watchdogScript(): URL {
  const fromSource = import.meta.url.endsWith('.ts');
  return new URL(fromSource ? './watchdog/main.ts' : './watchdog.js', import.meta.url);
}

/** A running CMD under its watchdog. */
export class SupervisedCommand {
  readonly #watchdog: ChildProcess;
  readonly #end: Promise<CommandEnd>;
  readonly #unsubscribe: () => void;
  readonly #state: EndState;

  private constructor(
    watchdog: ChildProcess,
    end: Promise<CommandEnd>,
    unsubscribe: () => void,
    state: EndState,
  ) {
    this.#watchdog = watchdog;
    this.#end = end;
    this.#unsubscribe = unsubscribe;
    this.#state = state;
  }

  /**
   * Starts the watchdog, gives it the current deadline, then has it start `command` with `env`.
   * Resolves once CMD runs; rejects with a CliError when it cannot start.
   */
  static async start(
    command: readonly string[],
    env: Readonly<Record<string, string>>,
    graceMs: number,
    deadline: LeaseDeadline,
  ): Promise<SupervisedCommand> {
    const [file, ...args] = command;
    if (file === undefined) throw new Error('SupervisedCommand.start: empty command');
    // Its own process group (detached): a terminal's Ctrl-Z stops the supervisor, not the watchdog.
    const watchdog = fork(watchdogScript(), [], { detached: true, stdio: 'inherit' });
    const send = (message: ToWatchdog): void => sendTo(watchdog, message);
    send({ type: 'deadline', killAt: String(deadline.killAt) });
    const unsubscribe = deadline.onChange((killAt) =>
      send({ type: 'deadline', killAt: String(killAt) }),
    );
    send({ type: 'spawn', command: file, args, env, graceMs });
    const state: EndState = { expired: false, stopped: false };
    let supervised: SupervisedCommand | undefined;
    const started = new Promise<void>((resolve, reject) => {
      const end = new Promise<CommandEnd>((resolveEnd) => {
        let ended = false;
        let pid: number | undefined;
        watchdog.on('message', (message: FromWatchdog) => {
          switch (message.type) {
            case 'spawned':
              pid = message.pid;
              resolve();
              break;
            case 'spawn-failed':
              ended = true;
              reject(
                new CliError(
                  message.code === 'ENOENT' ? 'COMMAND_NOT_FOUND' : 'COMMAND_NOT_EXECUTABLE',
                  `cannot run ${file}: ${message.message}`,
                ),
              );
              break;
            case 'expired':
              state.expired = true;
              break;
            case 'exited':
              ended = true;
              resolveEnd(
                state.expired
                  ? { kind: 'expired' }
                  : state.stopped
                    ? { kind: 'stopped' }
                    : { kind: 'exited', code: message.code, signal: message.signal },
              );
              break;
          }
        });
        watchdog.once('exit', (code, signal) => {
          if (ended) return;
          // Without its watchdog CMD would run unguarded: end its group here.
          if (pid !== undefined) killGroup(pid);
          const error = new CliError(
            'WATCHDOG_FAILED',
            `the watchdog process ended (${signal ?? `exit code ${code}`}) while CMD ran`,
          );
          reject(error);
          resolveEnd(Promise.reject(error));
        });
      });
      supervised = new SupervisedCommand(watchdog, end, unsubscribe, state);
      // The end is awaited through `ended()`; a rejection before that must not go unhandled.
      end.catch(() => {});
    });
    try {
      await started;
    } catch (error) {
      unsubscribe();
      throw error;
    }
    return supervised!;
  }

  /** Resolves when CMD has exited (and its group was killed). */
  async ended(): Promise<CommandEnd> {
    try {
      return await this.#end;
    } finally {
      this.#unsubscribe();
    }
  }

  /** Passes `signal` to CMD's process group. */
  signal(signal: NodeJS.Signals): void {
    sendTo(this.#watchdog, { type: 'signal', signal });
  }

  /** The hold is lost: SIGTERM to CMD's group, SIGKILL after the grace. */
  stop(): void {
    this.#state.stopped = true;
    sendTo(this.#watchdog, { type: 'stop' });
  }
}

function killGroup(pid: number): void {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // The group is gone already.
  }
}

/**
 * Sends a message unless the channel is closed. A watchdog that exits meanwhile (CMD just ended)
 * makes the write fail: that is not an error, its `exited` message or its exit tells what happened.
 */
function sendTo(watchdog: ChildProcess, message: ToWatchdog): void {
  if (watchdog.connected) watchdog.send(message, () => {});
}
