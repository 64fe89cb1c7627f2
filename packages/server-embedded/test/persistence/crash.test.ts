// The crash test of the data dir: the etcdkit-server CLI on a data dir is killed with SIGKILL at
// random moments while clients write to it, and started again on the same directory, over and over.
// After every restart, every acknowledged write must be there with its exact value and revision,
// every acknowledged delete must have stuck, writes whose outcome the kill left unknown must be
// either absent or exactly what was written, and the revision must never go backwards.
//
// A kill rarely lands inside a write (SIGKILL does not tear what reached the page cache; a power
// cut does, which damage.test.ts covers byte by byte); it often lands between a write and its
// fsync, mid-snapshot or mid-rotation. ETCDKIT_CRASH_KILLS (default 21) sets how many kills.
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Etcd } from '@etcdkit/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removeDir, temporaryDir } from './support.js';

const KILLS = Number(process.env.ETCDKIT_CRASH_KILLS ?? 21);
const WRITERS = 8;
/** Small, so that snapshots and log truncation happen many times during the test. */
const SNAPSHOT_COUNT = 250;
const CLI = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));
const REPOSITORY = fileURLToPath(new URL('../../../../', import.meta.url));

/** What the test knows of one key. */
type Expectation =
  | { readonly state: 'present'; readonly value: string; readonly revision: bigint }
  | { readonly state: 'deleted' }
  /** A put whose answer never came: the key holds this value or does not exist. */
  | { readonly state: 'maybe'; readonly value: string }
  /** A delete whose answer never came: the key may or may not still be there. */
  | { readonly state: 'unknown' };

/** A running server process. */
interface ServerProcess {
  readonly child: ChildProcess;
  readonly endpoint: string;
  readonly exited: Promise<void>;
  /** Log lines (JSON) it wrote so far. */
  readonly log: string[];
}

/** Starts the CLI on `dir`; resolves once it logs that it serves. */
function startServer(dir: string): Promise<ServerProcess> {
  const args = [
    ...['--conditions=etcdkit-source', '--import', 'tsx', CLI],
    ...['--data-dir', dir, '--snapshot-count', String(SNAPSHOT_COUNT)],
    ...['--listen-client-urls', 'http://127.0.0.1:0', '--log-outputs', 'stdout'],
  ];
  const child = spawn(process.execPath, args, {
    cwd: REPOSITORY,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const log: string[] = [];
  return new Promise((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      log.push(line);
      const entry = JSON.parse(line) as { msg?: string; endpoints?: string[] };
      if (entry.msg === 'ready to serve client requests' && entry.endpoints?.[0] !== undefined) {
        resolve({ child, endpoint: entry.endpoints[0], exited, log });
      }
    });
    void exited.then(() =>
      reject(new Error(`the server exited before serving:\n${log.join('\n')}`)),
    );
  });
}

describe('a data dir server killed with SIGKILL during writes', () => {
  let dir: string;
  let current: ServerProcess | undefined;
  const expected = new Map<string, Expectation>();
  /** The highest revision any response showed. */
  let highestRevision = 0n;
  /** Puts answered so far, over all rounds; onAcknowledged is told of each. */
  let acknowledgedPuts = 0;
  let onAcknowledged: (() => void) | undefined;

  /** Resolves once `count` more puts than now are acknowledged. */
  function acknowledgements(count: number): Promise<void> {
    const target = acknowledgedPuts + count;
    return new Promise((resolve) => {
      onAcknowledged = () => {
        if (acknowledgedPuts >= target) resolve();
      };
      onAcknowledged();
    });
  }

  beforeAll(async () => {
    dir = await temporaryDir();
  });
  afterAll(async () => {
    if (current !== undefined && current.child.exitCode === null) {
      current.child.kill('SIGKILL');
      await current.exited;
    }
    await removeDir(dir);
  });

  /** Checks every expectation against the server, and that the revision did not go back. */
  async function verify(etcd: Etcd): Promise<void> {
    const all = await etcd.range({ prefix: 'k/' });
    expect(all.header.revision).toBeGreaterThanOrEqual(highestRevision);
    highestRevision = all.header.revision;
    const found = new Map(all.kvs.map((kv) => [kv.keyText(), kv]));
    const problems: string[] = [];
    for (const [key, expectation] of expected) {
      const kv = found.get(key);
      switch (expectation.state) {
        case 'present':
          if (kv?.text() !== expectation.value || kv.modRevision !== expectation.revision) {
            problems.push(
              `${key}: acknowledged ${expectation.value}@${expectation.revision}, found ${kv?.text()}@${kv?.modRevision}`,
            );
          }
          break;
        case 'deleted':
          if (kv !== undefined) problems.push(`${key}: acknowledged delete, found ${kv.text()}`);
          break;
        case 'maybe':
          if (kv !== undefined && kv.text() !== expectation.value) {
            problems.push(`${key}: maybe ${expectation.value}, found ${kv.text()}`);
          }
          // Settled now: whatever survived is what stays.
          expected.set(
            key,
            kv === undefined
              ? { state: 'deleted' }
              : { state: 'present', value: kv.text(), revision: kv.modRevision },
          );
          break;
        case 'unknown':
          expected.set(
            key,
            kv === undefined
              ? { state: 'deleted' }
              : { state: 'present', value: kv.text(), revision: kv.modRevision },
          );
          break;
      }
    }
    expect(problems).toEqual([]);
  }

  /** One writer: unique keys, and now and then a delete of one of its acknowledged keys. */
  async function writer(etcd: Etcd, round: number, id: number, signal: AbortSignal): Promise<void> {
    const mine: string[] = [];
    for (let n = 0; !signal.aborted; n++) {
      if (n % 7 === 6 && mine.length > 0) {
        const key = mine.splice(Math.floor(Math.random() * mine.length), 1)[0]!;
        expected.set(key, { state: 'unknown' });
        try {
          const result = await etcd.delete(key, { signal });
          expected.set(key, { state: 'deleted' });
          if (result.header.revision > highestRevision) highestRevision = result.header.revision;
        } catch {
          return;
        }
        continue;
      }
      const key = `k/${round}/${id}/${n}`;
      const value = `${round}.${id}.${n}.${Math.random().toString(36).slice(2, 8)}`;
      expected.set(key, { state: 'maybe', value });
      try {
        const result = await etcd.put(key, value, { signal });
        expected.set(key, { state: 'present', value, revision: result.header.revision });
        if (result.header.revision > highestRevision) highestRevision = result.header.revision;
        mine.push(key);
        acknowledgedPuts++;
        onAcknowledged?.();
      } catch {
        return;
      }
    }
  }

  // The time limit only stops a hung run: every round starts the CLI through tsx, slow under load.
  it(`loses no acknowledged write through ${KILLS} kills`, { timeout: 300_000 }, async () => {
    let killedAfter = 0;
    for (let round = 0; round <= KILLS; round++) {
      current = await startServer(dir);
      const etcd = new Etcd({ endpoints: [current.endpoint], dialTimeoutMs: 2_000 });
      try {
        await verify(etcd);
        if (round === KILLS) break;
        const stop = new AbortController();
        const writers = Array.from({ length: WRITERS }, (_, id) =>
          writer(etcd, round, id, stop.signal),
        );
        // A random moment counted in acknowledged puts, not time, so the load does not decide how
        // much each round writes: sometimes before the first write lands, sometimes mid-snapshot.
        const puts = Math.floor(Math.random() * 60);
        await acknowledgements(puts);
        killedAfter += puts;
        current.child.kill('SIGKILL');
        await current.exited;
        stop.abort();
        await Promise.all(writers);
      } finally {
        onAcknowledged = undefined;
        await etcd.close();
      }
    }
    // The last start is stopped cleanly.
    current?.child.kill('SIGTERM');
    await current?.exited;
    expect(acknowledgedPuts).toBeGreaterThanOrEqual(killedAfter);
    expect(killedAfter).toBeGreaterThan(0);
  });
});
