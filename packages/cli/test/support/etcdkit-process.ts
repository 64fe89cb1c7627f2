// Runs the etcdkit CLI from source as child processes, as a service manager would, and the shell
// commands it supervises: heartbeat writers whose lines show who ran when. Every process started
// here is killed by killAll() (for afterEach), stopped ones continued first.
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The repository root: `--import tsx` resolves tsx from the working directory. */
const REPO_ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
const CLI_MAIN = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));

/** How a child ended, and what it wrote. */
/**
 * A test's time limit and a wait's: they stop a hung run, nothing else. Every etcdkit process starts
 * through tsx, which takes seconds on a loaded machine, and a test starts several.
 */
export const SUPERVISOR_TEST_MS = 180_000;
const WAIT_MS = 60_000;

export interface Exit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** A running child. */
export interface Running {
  readonly child: ChildProcess;
  readonly pid: number;
  /** What it wrote to stdout so far. */
  stdout(): string;
  /** What it wrote to stderr so far. */
  stderr(): string;
  readonly exited: Promise<Exit>;
}

const running = new Set<ChildProcess>();

/** Starts `etcdkit ARGS` from source, with only PATH and HOME of this environment and `env`. */
export function startEtcdkit(args: readonly string[], env: NodeJS.ProcessEnv = {}): Running {
  return track(
    spawn(process.execPath, ['--conditions=etcdkit-source', '--import', 'tsx', CLI_MAIN, ...args], {
      cwd: REPO_ROOT,
      // No ETCDCTL_* of the machine may change what is tested.
      env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
}

/** Starts etcdctl (API v3) with `args`. */
export function startEtcdctl(endpoint: string, args: readonly string[]): Running {
  return track(
    spawn('etcdctl', [`--endpoints=${endpoint}`, ...args], {
      env: { PATH: process.env.PATH, HOME: process.env.HOME, ETCDCTL_API: '3' },
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
}

function track(child: ChildProcess): Running {
  running.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    stdout += chunk.toString('utf8');
  });
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  const exited = new Promise<Exit>((resolve) => {
    child.once('close', (code, signal) => {
      running.delete(child);
      resolve({ code, signal, stdout, stderr });
    });
  });
  return { child, pid: child.pid!, stdout: () => stdout, stderr: () => stderr, exited };
}

/** Kills every child still running (continuing stopped ones); waits for them to go. */
export async function killAll(): Promise<void> {
  const children = [...running];
  for (const child of children) {
    child.kill('SIGCONT');
    child.kill('SIGKILL');
  }
  await Promise.all(
    children.map((child) => new Promise((resolve) => child.once('close', resolve))),
  );
}

/** Polls an asynchronous `check` every 20 ms until it holds; fails after `timeoutMs`. */
export async function untilAsync(
  check: () => Promise<boolean>,
  what: string,
  timeoutMs = WAIT_MS,
): Promise<void> {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Polls `check` every 20 ms until it holds; fails after `timeoutMs` naming `what`. */
export async function until(
  check: () => boolean,
  what: string,
  timeoutMs = WAIT_MS,
): Promise<void> {
  const started = Date.now();
  while (!check()) {
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * A shell command writing heartbeats to `file`: `TOKEN LEASE PID N WHO` lines (the fencing token
 * and lease etcdkit gave it, its shell's pid, a counter, and $WHO, which names its supervisor), every 50 ms; `beats` of them, for ever, or
 * until a file exists (`{ until: path }`).
 */
export function heartbeats(
  file: string,
  beats: number | 'forever' | { readonly until: string },
): string[] {
  const condition =
    beats === 'forever'
      ? 'true'
      : typeof beats === 'number'
        ? `[ "$i" -lt ${beats} ]`
        : `[ ! -e '${beats.until}' ]`;
  return [
    'sh',
    '-c',
    `i=0; while ${condition}; do echo "$ETCDKIT_FENCING_TOKEN $ETCDKIT_LEASE_ID $$ $i \${WHO:-}" >> '${file}'; i=$((i+1)); sleep 0.05; done`,
  ];
}

/** One heartbeat line. */
export interface Beat {
  readonly token: string;
  readonly lease: string;
  readonly pid: number;
  readonly n: number;
  /** $WHO of the supervisor's environment, '' without one. */
  readonly who: string;
}

/** The heartbeats in `file` so far. */
export function readBeats(file: string): Beat[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return [];
  }
  return text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      const [token, lease, pid, n, who] = line.split(' ');
      return { token: token!, lease: lease!, pid: Number(pid), n: Number(n), who: who ?? '' };
    });
}

/** One command's uninterrupted run of heartbeats. */
export interface Run {
  readonly token: string;
  readonly lease: string;
  readonly pid: number;
  readonly who: string;
  readonly beats: number;
}

/**
 * The heartbeats cut into runs of one command each (by shell pid). Two commands that overlapped
 * would show as more runs than commands: a pid seen in two runs.
 */
export function runsOf(beats: readonly Beat[]): Run[] {
  const runs: Run[] = [];
  for (const beat of beats) {
    const last = runs.at(-1);
    if (last !== undefined && last.pid === beat.pid) {
      runs[runs.length - 1] = { ...last, beats: last.beats + 1 };
    } else {
      runs.push({ token: beat.token, lease: beat.lease, pid: beat.pid, who: beat.who, beats: 1 });
    }
  }
  return runs;
}

/** Each command's heartbeats are one run (no two commands interleaved), in fencing token order. */
export function oneAtATime(runs: readonly Run[]): boolean {
  const tokens = runs.map((run) => BigInt(run.token));
  return (
    new Set(runs.map((run) => run.pid)).size === runs.length &&
    tokens.every((token, i) => i === 0 || token > tokens[i - 1]!)
  );
}
