// The Go contender of the recipes suite: bench/go/recipes.go, built at run time against etcd 3.4's
// clientv3/concurrency (offline: GO111MODULE=off GOPATH=/usr/share/gocode) into a temp dir, and
// run once per measure. Without a `go` binary the suite names the rows it skips.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const source = fileURLToPath(new URL('./go/recipes.go', import.meta.url));
const GOPATH = process.env.ETCDKIT_BENCH_GOPATH ?? '/usr/share/gocode';
const run = promisify(execFile);

/** The built Go program, or why there is none. */
export type GoProgram =
  | { readonly ok: true; readonly binary: string; readonly dispose: () => Promise<void> }
  | { readonly ok: false; readonly reason: string };

/** Builds the Go program into a temp dir; a missing `go` or a failed build is a reason to skip. */
export async function buildGoProgram(): Promise<GoProgram> {
  const dir = await mkdtemp(join(tmpdir(), 'etcdkit-bench-go-'));
  const binary = join(dir, 'recipes-go');
  const dispose = () => rm(dir, { recursive: true, force: true });
  try {
    await run('go', ['build', '-o', binary, source], {
      cwd: dir,
      env: { ...process.env, GO111MODULE: 'off', GOPATH },
      timeout: 300_000,
    });
    return { ok: true, binary, dispose };
  } catch (error) {
    await dispose();
    const code = (error as { code?: unknown }).code;
    const reason =
      code === 'ENOENT'
        ? 'go not found on PATH'
        : `go build failed: ${String((error as { stderr?: unknown }).stderr ?? error).trim()}`;
    return { ok: false, reason };
  }
}

/** Runs a measuring mode (handoff, resign, cycles) and resolves with its samples. */
export async function goSamples(binary: string, args: readonly string[]): Promise<number[]> {
  const { stdout } = await run(binary, args, { timeout: 120_000 });
  const line = stdout.trim().split('\n').at(-1) ?? '';
  return (JSON.parse(line) as { samples: number[] }).samples;
}

/** A running Go process and the lines it printed, awaited one by one. */
export class GoProcess {
  readonly #lines: string[] = [];
  readonly #waiting: Array<() => void> = [];
  readonly exited: Promise<void>;

  constructor(readonly child: ChildProcess) {
    if (!child.stdout) throw new Error('the Go process has no stdout');
    createInterface({ input: child.stdout }).on('line', (line) => {
      this.#lines.push(line);
      for (const wake of this.#waiting.splice(0)) wake();
    });
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
  }

  /** Starts the program; with `input`, its stdin is a pipe (see {@link say}). */
  static start(binary: string, args: readonly string[], input = false): GoProcess {
    const stdin = input ? 'pipe' : 'ignore';
    return new GoProcess(spawn(binary, args, { stdio: [stdin, 'pipe', 'inherit'] }));
  }

  /** Writes a line to the process's stdin (started with `input`). */
  say(line: string): void {
    this.child.stdin?.write(`${line}\n`);
  }

  /** The lines printed so far. */
  get lines(): readonly string[] {
    return this.#lines;
  }

  /** Whether the process printed `line` by now. */
  printed(line: string): boolean {
    return this.#lines.includes(line);
  }

  /** Resolves once the process printed `line`; rejects if it exits first. */
  async line(line: string): Promise<void> {
    let exited = false;
    void this.exited.then(() => {
      exited = true;
      for (const wake of this.#waiting.splice(0)) wake();
    });
    while (!this.#lines.includes(line)) {
      if (exited) throw new Error(`the Go process exited before printing ${line}`);
      await new Promise<void>((resolve) => this.#waiting.push(resolve));
    }
  }

  async kill(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
    await this.exited;
  }
}

/** A lock cycles run over several processes: the summed rate, cycles and CPU time. */
export interface CyclesRun {
  /** Cycles per second, the sum of each process's rate. */
  readonly rate: number;
  readonly cycles: number;
  /** The CPU milliseconds (user plus system) the processes spent over their loops, summed. */
  readonly cpuMs: number;
  /** The processes' socket writes and reads over their loops, where counted (ours). */
  readonly socket?: { readonly writes: number; readonly reads: number };
}

/**
 * Lock cycles/s of `contenders` split over `processes` Go processes (as evenly as they go), all
 * started together once each has opened its sessions, with their CPU time (getrusage).
 */
export async function goCyclesOverProcesses(
  binary: string,
  endpoint: string,
  prefix: string,
  contenders: number,
  processes: number,
  ms: number,
): Promise<CyclesRun> {
  const started = Array.from({ length: processes }, (_, i) => {
    const share = Math.floor(contenders / processes) + (i < contenders % processes ? 1 : 0);
    const flags = ['-endpoint', endpoint, '-prefix', prefix, '-contenders', String(share)];
    return GoProcess.start(binary, ['cycles', ...flags, '-ms', String(ms), '-ready'], true);
  });
  try {
    await Promise.all(started.map((go) => go.line('ready')));
    for (const go of started) go.say('go');
    await Promise.all(started.map((go) => go.exited));
    let rate = 0;
    let cycles = 0;
    let cpuMs = 0;
    for (const go of started) {
      const line = go.lines.at(-1) ?? '';
      const answer = JSON.parse(line) as { samples: number[]; cycles?: number; cpuMs?: number };
      rate += answer.samples[0] ?? Number.NaN;
      cycles += answer.cycles ?? Number.NaN;
      cpuMs += answer.cpuMs ?? Number.NaN;
    }
    return { rate, cycles, cpuMs };
  } finally {
    for (const go of started) await go.kill();
  }
}
