// The watchdog process: CMD's parent, and the one thing that does not stall with the supervisor.
// It starts CMD in a process group of its own and kills that group (SIGTERM, then SIGKILL after
// the grace) when the supervisor says the hold is lost, when the supervisor goes away, or when the
// last deadline the supervisor gave passes without a fresher one: a supervisor stopped by SIGSTOP,
// a long GC or a paused container cannot watch its lease, but this process still counts time.
//
// It is detached in its own process group, so a terminal's Ctrl-C or Ctrl-Z (sent to the
// supervisor's group) does not stop it; the supervisor passes such signals on explicitly.
import { type ChildProcess, spawn } from 'node:child_process';
import type { FromWatchdog, ToWatchdog } from './protocol.js';

let child: ChildProcess | undefined;
let graceMs = 0;
let killAt: bigint | undefined;
let deadlineTimer: NodeJS.Timeout | undefined;
let killTimer: NodeJS.Timeout | undefined;
let terminating = false;

function send(message: FromWatchdog): void {
  if (process.connected) process.send?.(message);
}

/** Signals CMD's whole group; a group already gone is not an error. */
function signalGroup(signal: NodeJS.Signals): void {
  if (child?.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // ESRCH: the group has exited meanwhile.
  }
}

function msUntil(at: bigint): number {
  return Math.max(0, Number(at - process.hrtime.bigint()) / 1e6);
}

/** SIGTERM now, SIGKILL after the grace but never after the deadline. */
function terminate(): void {
  if (terminating) return;
  terminating = true;
  clearTimeout(deadlineTimer);
  signalGroup('SIGTERM');
  const waitMs = killAt === undefined ? graceMs : Math.min(graceMs, msUntil(killAt));
  killTimer = setTimeout(() => signalGroup('SIGKILL'), waitMs);
}

/** Arms the timer for the current deadline: SIGTERM a grace before it. */
function arm(): void {
  clearTimeout(deadlineTimer);
  if (killAt === undefined || terminating) return;
  deadlineTimer = setTimeout(
    () => {
      // A deadline moved meanwhile re-arms; one that has come stops CMD.
      if (killAt !== undefined && msUntil(killAt) > graceMs + 1) {
        arm();
        return;
      }
      send({ type: 'expired' });
      terminate();
    },
    Math.max(0, msUntil(killAt) - graceMs),
  );
}

function startCommand(message: Extract<ToWatchdog, { type: 'spawn' }>): void {
  graceMs = message.graceMs;
  const started = spawn(message.command, [...message.args], {
    env: message.env,
    stdio: 'inherit',
    detached: true,
  });
  child = started;
  started.once('spawn', () => send({ type: 'spawned', pid: started.pid! }));
  started.once('error', (error: NodeJS.ErrnoException) => {
    if (started.pid !== undefined) return; // a failed kill, not a failed start
    send({ type: 'spawn-failed', code: error.code ?? 'UNKNOWN', message: error.message });
    finish();
  });
  started.once('exit', (code, signal) => {
    // The rest of the group (CMD's own children) goes too, so nothing it started outlives it.
    try {
      process.kill(-started.pid!, 'SIGKILL');
    } catch {
      // No process left in the group.
    }
    send({ type: 'exited', code, signal });
    finish();
  });
}

function finish(): void {
  clearTimeout(deadlineTimer);
  clearTimeout(killTimer);
  if (process.connected) process.disconnect();
}

process.on('message', (message: ToWatchdog) => {
  switch (message.type) {
    case 'spawn':
      startCommand(message);
      break;
    case 'deadline':
      killAt = BigInt(message.killAt);
      arm();
      break;
    case 'signal':
      signalGroup(message.signal);
      break;
    case 'stop':
      terminate();
      break;
  }
});
// The supervisor died or closed the channel: nothing keeps the lease alive any more.
process.on('disconnect', () => {
  if (child === undefined || child.exitCode !== null || child.signalCode !== null) process.exit(0);
  terminate();
});
// Signals sent to this process alone (not through the supervisor) stop CMD the same way.
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, terminate);
