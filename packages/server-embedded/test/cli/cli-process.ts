// Runs the etcdkit-server CLI from source as a child process, as a user would run it, and reads
// its JSON log lines. Every child started here is killed by stopAllCliProcesses() if a test left
// it running.
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { freePort } from '@etcdkit/testkit';

/** The repository root: `--import tsx` resolves tsx from the working directory. */
export const REPO_ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
/** The CLI's entry module. */
export const CLI_MAIN = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));

/** One JSON log line of the server. */
export interface LogLine {
  readonly level: string;
  readonly msg: string;
  readonly [field: string]: unknown;
}

/** How a child ended. */
export interface CliExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** A running CLI server. */
export interface CliProcess {
  readonly child: ChildProcess;
  readonly port: number;
  /** `http://127.0.0.1:PORT` (`https://` when started with TLS URLs). */
  readonly endpoint: string;
  /** Log lines so far (stderr, parsed). */
  logs(): LogLine[];
  /** Resolves when the process has exited. */
  readonly exited: Promise<CliExit>;
}

const running = new Set<ChildProcess>();

/** Spawns the CLI with `args`; resolves with its exit (for commands that end by themselves). */
export function runCli(args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<CliExit> {
  return watchExit(spawnCli(args, env));
}

/**
 * Starts a server on a free port of 127.0.0.1 (unless `args` choose URLs), resolving once it
 * logged that it is ready. `scheme` picks the URL scheme of the endpoint it reports.
 */
export async function startCli(
  args: readonly string[] = [],
  options: { readonly env?: NodeJS.ProcessEnv; readonly scheme?: 'http' | 'https' } = {},
): Promise<CliProcess> {
  const port = await freePort();
  const endpoint = `${options.scheme ?? 'http'}://127.0.0.1:${port}`;
  const child = spawnCli(['--listen-client-urls', endpoint, ...args], options.env ?? {});
  const exited = watchExit(child);
  const lines = logLinesOf(child);
  const ready = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the CLI did not get ready in 20 s')), 20_000);
    const check = setInterval(() => {
      if (lines.some((line) => line.msg === 'ready to serve client requests')) {
        clearTimeout(timer);
        clearInterval(check);
        resolve();
      }
    }, 10);
    void exited.then((exit) => {
      clearTimeout(timer);
      clearInterval(check);
      reject(new Error(`the CLI exited before it was ready (code ${exit.code}): ${exit.stderr}`));
    });
  });
  try {
    await ready;
  } catch (error) {
    child.kill('SIGKILL');
    await exited;
    throw error;
  }
  return { child, port, endpoint, logs: () => [...lines], exited };
}

/** A member as the CLI's startup lines print it. */
export interface PrintedMember {
  readonly name: string;
  /** The member id in hex. */
  readonly id: string;
  readonly endpoint: string;
}

/** A running CLI serving a simulated cluster (--simulated-members), with stdin to command it. */
export interface CliClusterProcess {
  readonly child: ChildProcess;
  /** The members from the `member` startup lines, in order. */
  readonly members: readonly PrintedMember[];
  /** Every line written to stdout so far, startup lines first. */
  stdoutLines(): string[];
  /** Log lines so far (stderr, parsed). */
  logs(): LogLine[];
  /** Writes `line` to stdin and resolves with the next answer (`ok ...` or `error ...`). */
  command(line: string): Promise<string>;
  /** Resolves when the process has exited. */
  readonly exited: Promise<CliExit>;
}

/**
 * Starts the CLI with `--simulated-members` and `args` (the members on free ports of 127.0.0.1
 * unless `args` choose a URL), resolving once it printed its `ready` line.
 */
export async function startCliCluster(
  members: number,
  args: readonly string[] = [],
): Promise<CliClusterProcess> {
  const child = spawnCli(
    ['--simulated-members', String(members), '--listen-client-urls', 'http://127.0.0.1:0', ...args],
    {},
    'pipe',
  );
  const exited = watchExit(child);
  const logs = logLinesOf(child);
  const stdout: string[] = [];
  const answers: string[] = [];
  const waiters: (() => void)[] = [];
  onLines(
    child.stdout!,
    (line) => {
      stdout.push(line);
      if (line.startsWith('ok') || line.startsWith('error')) answers.push(line);
    },
    () => {
      for (const wake of waiters.splice(0)) wake();
    },
  );
  // Resolves when `done` holds, checked on every stdout chunk; rejects if the process exits.
  const until = (done: () => boolean, what: string): Promise<void> =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ${what} in 20 s`)), 20_000);
      const check = (): void => {
        if (done()) {
          clearTimeout(timer);
          resolve();
        } else {
          waiters.push(check);
        }
      };
      check();
      void exited.then((exit) => {
        clearTimeout(timer);
        reject(new Error(`the CLI exited (code ${exit.code}) before ${what}: ${exit.stderr}`));
      });
    });
  try {
    await until(() => stdout.some((line) => line.startsWith('ready')), 'ready line');
  } catch (error) {
    child.kill('SIGKILL');
    await exited;
    throw error;
  }
  const printed = stdout
    .filter((line) => line.startsWith('member '))
    .map((line): PrintedMember => {
      const [, name, id, endpoint] = line.split(' ');
      return { name: name!, id: id!, endpoint: endpoint! };
    });
  let asked = 0;
  return {
    child,
    members: printed,
    stdoutLines: () => [...stdout],
    logs: () => [...logs],
    async command(line) {
      const index = asked++;
      child.stdin!.write(`${line}\n`);
      await until(() => answers.length > index, `answer to ${JSON.stringify(line)}`);
      return answers[index]!;
    },
    exited,
  };
}

/** Kills (SIGKILL) every CLI child still running; for afterEach. */
export async function stopAllCliProcesses(): Promise<void> {
  const children = [...running];
  for (const child of children) child.kill('SIGKILL');
  await Promise.all(children.map((child) => new Promise((resolve) => child.once('exit', resolve))));
}

function spawnCli(
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  stdin: 'ignore' | 'pipe' = 'ignore',
): ChildProcess {
  const child = spawn(
    process.execPath,
    ['--conditions=etcdkit-source', '--import', 'tsx', CLI_MAIN, ...args],
    {
      cwd: REPO_ROOT,
      // No ETCD_* variables of the machine may leak into the flags under test.
      env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
      stdio: [stdin, 'pipe', 'pipe'],
    },
  );
  running.add(child);
  child.once('exit', () => running.delete(child));
  return child;
}

/**
 * Calls `each` with every complete line of `stream` (a chunk may end mid-line: the rest waits for
 * the next), then `afterChunk` once the chunk's lines are handed out.
 */
function onLines(
  stream: NodeJS.ReadableStream,
  each: (line: string) => void,
  afterChunk: () => void = () => {},
): void {
  let buffered = '';
  stream.on('data', (chunk: Buffer) => {
    buffered += chunk.toString('utf8');
    let newline = buffered.indexOf('\n');
    while (newline >= 0) {
      const line = buffered.slice(0, newline);
      buffered = buffered.slice(newline + 1);
      each(line);
      newline = buffered.indexOf('\n');
    }
    afterChunk();
  });
}

/** The child's stderr as JSON log lines, filled as they arrive. */
function logLinesOf(child: ChildProcess): LogLine[] {
  const lines: LogLine[] = [];
  onLines(child.stderr!, (text) => {
    try {
      lines.push(JSON.parse(text) as LogLine);
    } catch {
      lines.push({ level: 'raw', msg: text });
    }
  });
  return lines;
}

function watchExit(child: ChildProcess): Promise<CliExit> {
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    stdout += chunk.toString('utf8');
  });
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  return new Promise((resolve) => {
    child.once('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}
