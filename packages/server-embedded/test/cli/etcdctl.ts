// Runs the real etcdctl (v3 API) against a server, and makes its output comparable between two
// servers: ids, ports, versions and sizes that legitimately differ become placeholders.
import { execFileSync, spawn } from 'node:child_process';

/** The etcdctl to run: `ETCDKIT_ETCDCTL_BIN`, or `etcdctl` on PATH. */
export const ETCDCTL = process.env.ETCDKIT_ETCDCTL_BIN ?? 'etcdctl';

/** etcdctl's version (`3.4.23`), or undefined when it cannot be run. */
export function etcdctlVersion(): string | undefined {
  try {
    const out = execFileSync(ETCDCTL, ['version'], { env: ctlEnv(), encoding: 'utf8' });
    return /etcdctl version: (\S+)/.exec(out)?.[1];
  } catch {
    return undefined;
  }
}

/** What one etcdctl run printed. */
export interface CtlResult {
  /** Exit code; `killed` when it was stopped after its time (watch, elect). */
  readonly code: number | 'killed';
  readonly stdout: string;
  readonly stderr: string;
}

/** Options of {@link etcdctl}. */
export interface CtlOptions {
  /** Written to its stdin, which is then closed (txn). */
  readonly stdin?: string;
  /**
   * Stop it (SIGTERM) this long after its first output: for commands that never end by themselves
   * (watch, lock, elect). Counted from the output, not the start, because only then has it done what
   * it was started for (replayed the history, taken the lock, won the election), however slowly a
   * loaded machine started it.
   */
  readonly stopAfterMs?: number;
  /** Called once, at its first output. */
  readonly onFirstOutput?: () => void;
  /** Global flags before the command (`--cacert`, `--cert`, `--key`). */
  readonly globalArgs?: readonly string[];
}

function ctlEnv(): NodeJS.ProcessEnv {
  // Only the API version: no ETCDCTL_* of the machine may change what is compared.
  return { PATH: process.env.PATH, HOME: process.env.HOME, ETCDCTL_API: '3' };
}

/** Runs `etcdctl --endpoints=<endpoint> <args>`. */
export function etcdctl(
  endpoint: string,
  args: readonly string[],
  options: CtlOptions = {},
): Promise<CtlResult> {
  const child = spawn(
    ETCDCTL,
    [
      `--endpoints=${endpoint}`,
      '--dial-timeout=3s',
      '--command-timeout=5s',
      ...(options.globalArgs ?? []),
      ...args,
    ],
    { env: ctlEnv(), stdio: ['pipe', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  let stopped = false;
  let stopper: NodeJS.Timeout | undefined;
  child.stdout.on('data', (chunk: Buffer) => {
    if (stdout === '') {
      options.onFirstOutput?.();
      if (options.stopAfterMs !== undefined) {
        stopper = setTimeout(() => {
          stopped = true;
          child.kill('SIGTERM');
        }, options.stopAfterMs);
      }
    }
    stdout += chunk.toString('utf8');
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  // An etcdctl that exits before reading its input must not fail the run with EPIPE.
  child.stdin.on('error', () => {});
  child.stdin.end(options.stdin ?? '');
  // A hard limit as well, so that a hung etcdctl never outlives the test.
  const limit = setTimeout(() => child.kill('SIGKILL'), 20_000);
  return new Promise((resolve) => {
    child.once('close', (code) => {
      clearTimeout(limit);
      if (stopper !== undefined) clearTimeout(stopper);
      resolve({ code: stopped ? 'killed' : (code ?? -1), stdout, stderr });
    });
  });
}

/** What is known of a server, to turn its own ids and addresses into placeholders. */
export interface ServerFacts {
  readonly endpoint: string;
  /** Global etcdctl flags every command against it needs (TLS material). */
  readonly globalArgs: readonly string[];
  readonly version: string;
  readonly peerUrls: readonly string[];
  /** Ids as decimal strings: cluster, members, leases seen so far. */
  readonly ids: Map<string, string>;
}

/** Records `id` (decimal or hex) under a placeholder name. */
export function learnId(facts: ServerFacts, id: bigint, name: string): void {
  facts.ids.set(id.toString(10), `<${name}>`);
  facts.ids.set(id.toString(16), `<${name}>`);
  // etcdctl prints lease ids with %016x.
  facts.ids.set(id.toString(16).padStart(16, '0'), `<${name}>`);
}

/**
 * Output of one server made comparable with another's: its endpoint, version, peer URLs and ids
 * become placeholders, as do sizes (an estimate here, bbolt's file there) and timings; etcdctl's
 * own JSON log lines (retries, with random client ids) are dropped.
 */
export function normalise(text: string, facts: ServerFacts): string {
  const hostPort = facts.endpoint.replace(/^https?:\/\//, '');
  let out = text
    .split('\n')
    .filter((line) => !line.startsWith('{"level":'))
    .join('\n')
    .replaceAll(facts.endpoint, '<endpoint>')
    .replaceAll(hostPort, '<host:port>')
    .replace(/took = [\d.]+[µnm]?s/g, 'took = <time>')
    .replace(/"dbSize(InUse)?":\d+/g, '"dbSize$1":<size>')
    .replace(/\b\d+(\.\d+)? [kMG]?B\b/g, '<size>')
    .replaceAll(facts.version, '<version>');
  for (const url of facts.peerUrls) out = out.replaceAll(url, '<peer-url>');
  // Longest first, so that no id is replaced inside a longer one.
  const ids = [...facts.ids.entries()].sort(([a], [b]) => b.length - a.length);
  for (const [id, placeholder] of ids) {
    out = out.replace(new RegExp(`(?<![0-9a-f])${id}(?![0-9a-f])`, 'g'), placeholder);
  }
  // Table columns are as wide as their widest cell, which the placeholders change.
  return out
    .split('\n')
    .map((line) => (/^[+|]/.test(line) ? line.replace(/-{2,}/g, '-').replace(/ {2,}/g, ' ') : line))
    .join('\n');
}
