import { type ChildProcess, spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
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
 */

const livePids = new Set<number>();
const tempDirs = new Set<string>();
let exitHandlerInstalled = false;
let watchdog: { child: ChildProcess; stdin: Writable } | undefined;
let watchdogFailed = false;

/** Runs in the watchdog process (`node -e`). Plain JavaScript, no dependencies. */
const WATCHDOG_SCRIPT = `
const fs = require('node:fs');
const pids = new Set();
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
    const set = kind === 'p' ? pids : dirs;
    if (op === '+') set.add(value); else set.delete(value);
  }
});
process.stdin.on('close', () => {
  for (const pid of pids) { try { process.kill(Number(pid), 'SIGKILL'); } catch {} }
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
    for (const pid of livePids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    for (const dir of tempDirs) {
      try {
        rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 50 });
      } catch {
        // best effort at exit
      }
    }
  });
}

/** Kill `pid` if this process exits (or dies) while it is still tracked. */
export function trackProcess(pid: number): void {
  installExitHandler();
  livePids.add(pid);
  tell(`+p ${pid}`);
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
  return { pids: [...livePids], dirs: [...tempDirs] };
}
