// The exit safety net kills a tracked pid only while it is still the process that was started:
// a pid reused by an unrelated process (its start time differs) is left alone.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { killIfStarted, startTimeOf } from '../src/internal/cleanup.js';

const CHILD = fileURLToPath(new URL('./fixtures/cleanup-child.ts', import.meta.url));
const started: ChildProcess[] = [];

/** A `sleep` process this test owns (killed after each test if still there). */
function sleeper(): ChildProcess {
  const child = spawn('sleep', ['300'], { stdio: 'ignore' });
  started.push(child);
  return child;
}

afterEach(() => {
  for (const child of started.splice(0)) child.kill('SIGKILL');
});

describe('startTimeOf and killIfStarted', () => {
  it('read the start time from /proc and kill only a process that started then', async () => {
    const child = sleeper();
    const start = startTimeOf(child.pid!);
    expect(start).toMatch(/^\d+$/);
    expect(startTimeOf(child.pid!)).toBe(start);
    expect(killIfStarted(child.pid!, `${start}0`)).toBe(false);
    expect(child.exitCode === null && child.signalCode === null).toBe(true);
    const exited = once(child, 'exit');
    expect(killIfStarted(child.pid!, start)).toBe(true);
    expect(await exited).toEqual([null, 'SIGKILL']);
    expect(startTimeOf(child.pid!)).toBe('');
  });
});

describe.each(['exit', 'hang'])('a test process that ends by %s', (how) => {
  it('kills the process it started and spares a pid now held by another', {
    timeout: 60_000,
  }, async () => {
    const reused = sleeper();
    const tracked = sleeper();
    const reusedExit = once(reused, 'exit');
    const trackedExit = once(tracked, 'exit');
    const test = spawn(
      process.execPath,
      ['--import', 'tsx', CHILD, how, String(reused.pid), String(tracked.pid)],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    started.push(test);
    const testExit = once(test, 'exit');
    const [line] = (await once(test.stdout!, 'data')) as [Buffer];
    expect(line.toString()).toBe('tracked\n');
    // `exit`: its exit handler kills; `hang`: killed itself, its watchdog does.
    if (how === 'hang') test.kill('SIGKILL');
    expect(await trackedExit).toEqual([null, 'SIGKILL']);
    // Both ran through their list in order, the reused pid first: it was passed over.
    let reusedEnded = false;
    void reusedExit.then(() => {
      reusedEnded = true;
    });
    await testExit;
    expect(reusedEnded).toBe(false);
    expect(reused.exitCode === null && reused.signalCode === null).toBe(true);
  });
});
