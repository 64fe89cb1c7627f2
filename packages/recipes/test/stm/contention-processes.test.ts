// runStm's contention option across processes: 8 processes of 8 transfers each on the same two
// keys, each run locking its keys (stmKeyLocks, Go's Mutex layout) after a conflict in its turn of
// the local queue. Every transfer applies exactly once, and no run needs more than
// afterConflicts + 2 attempts. Why that bound is exact (each process runs one transfer at a time,
// and nothing else writes the keys): attempt 1 commits only while no one queues for the keys; its
// conflict sends the run to its process's local queue (attempt 2, no wait) or, when runs queued,
// straight to the locks; a conflict there is the afterConflicts-th (1) and the run locks. Its
// turn's attempt commits: no run can commit on the keys while its queue keys exist (the others
// are behind it, or commit only while no one queues), and the turn starts from the keys as the
// commit that handed it over left them (stmKeyLocks reads a key whose watch has not shown it yet).
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Etcd } from '@etcdkit/client';
import { describeEachBackend } from '@etcdkit/testkit';
import { afterAll, beforeAll, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../../..', import.meta.url));
const CHILD = fileURLToPath(new URL('./transfer-process.ts', import.meta.url));
const PROCESSES = 8;
const TRANSFERS = 8;
const AFTER_CONFLICTS = 1;
const INITIAL = 1_000;

/** A transfer process; `lines` grows with what it prints. */
function start(args: string[]): { child: ChildProcess; lines: string[]; exited: Promise<number> } {
  const child = spawn(
    process.execPath,
    ['--conditions=etcdkit-source', '--import', 'tsx', CHILD, ...args],
    { cwd: ROOT, stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const lines: string[] = [];
  let partial = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    const parts = (partial + chunk.toString()).split('\n');
    partial = parts.pop() ?? '';
    lines.push(...parts);
  });
  const exited = new Promise<number>((resolve) =>
    child.once('exit', (code) => resolve(code ?? -1)),
  );
  return { child, lines, exited };
}

describeEachBackend('STM contention across processes', ({ backend, prefix }) => {
  let etcd: Etcd;
  beforeAll(() => {
    etcd = new Etcd({ endpoints: backend().endpoints });
  });
  afterAll(async () => {
    await etcd?.close();
  });

  it(`${PROCESSES} processes x ${TRANSFERS} transfers: each applies once, at most ${AFTER_CONFLICTS + 2} attempts a run`, async () => {
    const p = prefix();
    await etcd.put(`${p}a`, String(INITIAL));
    await etcd.put(`${p}b`, String(INITIAL));
    const endpoint = backend().endpoints[0] as string;
    const processes = Array.from({ length: PROCESSES }, () =>
      start([endpoint, p, String(TRANSFERS), String(AFTER_CONFLICTS)]),
    );
    try {
      await expect
        .poll(() => processes.every(({ lines }) => lines.includes('ready')), { timeout: 60_000 })
        .toBe(true);
      // All start at once, so their runs contend.
      for (const { child } of processes) child.stdin?.end('go\n');
      const codes = await Promise.all(processes.map(({ exited }) => exited));
      expect(codes).toEqual(processes.map(() => 0));
    } finally {
      for (const { child } of processes) child.kill('SIGKILL');
    }
    const attempts = processes.flatMap(({ lines }) =>
      lines.filter((line) => line.startsWith('attempts ')).map((line) => Number(line.slice(9))),
    );
    expect(attempts).toHaveLength(PROCESSES * TRANSFERS);
    // Each process moved 1 from a to b four times and 2 from b to a four times.
    const moved = PROCESSES * (TRANSFERS / 2) * (2 - 1);
    expect([
      Number((await etcd.get(`${p}a`))?.text()),
      Number((await etcd.get(`${p}b`))?.text()),
    ]).toEqual([INITIAL + moved, INITIAL - moved]);
    // They contended (some runs conflicted, so took the locks), and no run starved.
    expect(Math.max(...attempts)).toBeGreaterThan(1);
    expect(attempts.filter((n) => n > AFTER_CONFLICTS + 2)).toEqual([]);
    // Every lock was released: nothing left under the locks' prefix.
    expect((await etcd.range({ prefix: `${p}locks/`, countOnly: true })).count).toBe(0n);
  }, 180_000);
});
