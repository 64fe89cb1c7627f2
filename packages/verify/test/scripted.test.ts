// The scripted runs: the anomaly the checker must catch happens by construction, every run.
import { describe, expect, it } from 'vitest';
import type { Anomaly } from '../src/checker/check.js';
import { lostOnKill9, type ScriptedResult, staleSerializableRead } from '../src/matrix/scripted.js';
import type { RegisterInput, RegisterOutput } from '../src/models/register.js';

// Two starts of an etcdkit-server process through tsx: tens of seconds on a loaded machine.
const TIMEOUT = 240_000;

/** An anomaly's operations as `p<process> <request> -> <answer>`. */
function steps(ops: readonly { process: number; input: unknown; output: unknown }[]): string[] {
  return ops.map((op) => {
    const input = op.input as RegisterInput;
    const output = op.output as RegisterOutput;
    const request = input.type === 'get' ? `get ${input.key}` : `${input.type} ${input.key}`;
    const value = input.type === 'put' ? `=${input.value}` : '';
    const answer =
      output.type === 'get' ? `${output.value ?? 'absent'}@${output.modRevision}` : 'ok';
    return `p${op.process} ${request}${value} -> ${answer}`;
  });
}

/** The run's one anomaly, minimal, after its one fault of kind `fault`. */
function onlyAnomaly(result: ScriptedResult, fault: string): Anomaly {
  expect(result.valid).toBe(false);
  expect(result.faults.map((f) => f.name)).toEqual([fault]);
  expect(result.anomalies).toHaveLength(1);
  expect(result.anomalies[0]!.minimal).toBe(true);
  return result.anomalies[0]!;
}

describe('scripted anomalies', () => {
  it('a serializable read from a cut-off follower returns the value before an acknowledged write', {
    timeout: TIMEOUT,
  }, async () => {
    const result = await staleSerializableRead();
    const anomaly = onlyAnomaly(result, 'partition');
    const key = 'etcdkit-verify/scripted/stale-read';
    const put1 = result.history[0]!;
    expect(steps(anomaly.ops)).toEqual([
      `p0 put ${key}=v1 -> ok`,
      `p0 put ${key}=v2 -> ok`,
      `p1 get ${key} -> v1@${(put1.output as { revision: bigint }).revision}`,
    ]);
    // The stale read began after v2 was acknowledged, while the follower was cut off.
    const [, put2, get] = anomaly.ops;
    expect(get!.start).toBeGreaterThan(put2!.end);
    expect(get!.end).toBeLessThan(result.faults[0]!.end);
    expect(anomaly.ops.map((op) => op.id)).toEqual([...result.expectedAnomaly]);
  });

  it('an in-memory etcdkit-server killed with -9 forgets a write it acknowledged', {
    timeout: TIMEOUT,
  }, async () => {
    const result = await lostOnKill9();
    const anomaly = onlyAnomaly(result, 'kill');
    const key = 'etcdkit-verify/scripted/lost';
    expect(steps(anomaly.ops)).toEqual([`p0 put ${key}=v1 -> ok`, `p1 get ${key} -> absent@0`]);
    expect(anomaly.ops.map((op) => op.id)).toEqual([...result.expectedAnomaly]);
  });
});
