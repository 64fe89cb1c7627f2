import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { Socket } from 'node:net';
import type { Writable } from 'node:stream';

/**
 * Safety net for processes and temp dirs the testkit creates, for when a test forgets to stop
 * them or the test process dies first.
 *
 * Two layers: an 'exit' handler that SIGKILLs live children and removes temp dirs when this
 * process exits normally, and a small watchdog process that does the same when this process
 * dies without running exit handlers (SIGTERM from the runner, SIGKILL, a crash). The watchdog
 * learns what to clean through its stdin; the pipe closing is its signal that we are gone.
 *
 * A pid is killed only while it is still the process that was started: its start time (field 22
 * of /proc/<pid>/stat, in clock ticks since boot) must be the one recorded at spawn. Once a child
 * has been reaped (by this process, or by init after we died) its pid can be reused, and pid_max
 * is often 32768.
 */

/** Tracked pids and their start times (`''` where /proc cannot tell). */
const livePids = new Map<number, string>();
const tempDirs = new Set<string>();
let exitHandlerInstalled = false;
let watchdog: { child: ChildProcess; stdin: Writable } | undefined;
let watchdogFailed = false;

/** Runs in the watchdog process (`node -e`). Plain JavaScript, no dependencies. */
const WATCHDOG_SCRIPT = `
const fs = require('node:fs');
// As startTimeOf below.
function startTimeOf(pid) {
  try {
    const stat = fs.readFileSync('/proc/' + pid + '/stat', 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] || '';
  } catch { return ''; }
}
const pids = new Map();
const dirs = new Set();
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => {});
let pending = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
  pending += chunk;
  let newline;
  while ((newline = pending.indexOf('\\n')) >= 0) {
    const line = pending.slice(0, newline);
    pending = pending.slice(newline + 1);
    const op = line.slice(0, 1);
    const kind = line.slice(1, 2);
    const value = line.slice(3);
    if (kind === 'p') {
      const [pid, start = ''] = value.split(' ');
      if (op === '+') pids.set(pid, start); else pids.delete(pid);
    } else if (op === '+') dirs.add(value); else dirs.delete(value);
  }
});
process.stdin.on('close', () => {
  for (const [pid, start] of pids) {
    if (startTimeOf(Number(pid)) !== start) continue;
    try { process.kill(Number(pid), 'SIGKILL'); } catch {}
  }
  for (const dir of dirs) {
    try { fs.rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 50 }); } catch {}
  }
  process.exit(0);
});
`;

function ensureWatchdog(): Writable | undefined {
  if (watchdog !== undefined) return watchdog.stdin;
  if (watchdogFailed) return undefined;
  try {
    const child = spawn(process.execPath, ['-e', WATCHDOG_SCRIPT], {
      stdio: ['pipe', 'ignore', 'ignore'],
      // Its own process group: a Ctrl-C aimed at the test run must not kill it before it cleans.
      detached: true,
      env: {},
    });
    const stdin = child.stdin;
    if (stdin === null) throw new Error('watchdog has no stdin');
    child.on('error', () => {
      watchdogFailed = true;
      watchdog = undefined;
    });
    stdin.on('error', () => {});
    // Neither the watchdog nor its pipe may keep the test process alive.
    child.unref();
    if (stdin instanceof Socket) stdin.unref();
    watchdog = { child, stdin };
    return stdin;
  } catch {
    watchdogFailed = true;
    return undefined;
  }
}

function tell(line: string): void {
  ensureWatchdog()?.write(`${line}\n`);
}

function installExitHandler(): void {
  if (exitHandlerInstalled) return;
  exitHandlerInstalled = true;
  process.on('exit', () => {
    for (const [pid, start] of livePids) killIfStarted(pid, start);
    for (const dir of tempDirs) {
      try {
        rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 50 });
      } catch {
        // best effort at exit
      }
    }
  });
}

/**
 * The start time of process `pid` (field 22 of /proc/<pid>/stat), `''` when /proc has no such
 * process or there is no /proc (then a pid is killed as before, unchecked).
 */
export function startTimeOf(pid: number): string {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the parenthesised command name (which may hold spaces and parentheses).
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? '';
  } catch {
    return '';
  }
}

/**
 * SIGKILLs `pid` if it is the process that started at `start` (as {@link startTimeOf} gave it at
 * spawn); returns whether it sent the signal.
 */
export function killIfStarted(pid: number, start: string): boolean {
  if (startTimeOf(pid) !== start) return false;
  try {
    process.kill(pid, 'SIGKILL');
    return true;
  } catch {
    return false; // already gone
  }
}

/**
 * Kill `pid` if this process exits (or dies) while it is still tracked and still the process
 * that started at `start`. Call it right after the spawn, before the child can have been reaped;
 * `start` is for the testkit's own tests.
 */
export function trackProcess(pid: number, start = startTimeOf(pid)): void {
  installExitHandler();
  livePids.set(pid, start);
  tell(`+p ${pid} ${start}`);
}

export function untrackProcess(pid: number): void {
  if (livePids.delete(pid)) tell(`-p ${pid}`);
}

/** Remove `dir` if this process exits (or dies) while it is still tracked. */
export function trackTempDir(dir: string): void {
  installExitHandler();
  tempDirs.add(dir);
  tell(`+d ${dir}`);
}

export function untrackTempDir(dir: string): void {
  if (tempDirs.delete(dir)) tell(`-d ${dir}`);
}

/** What the safety net currently holds; for the testkit's own tests. */
export function trackedResources(): { pids: number[]; dirs: string[] } {
  return { pids: [...livePids.keys()], dirs: [...tempDirs] };
}
