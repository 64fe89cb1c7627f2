// The scripted runs: the anomaly the checker must catch happens by construction, every run.
import { describe, expect, it } from 'vitest';
import { lostOnKill9, staleSerializableRead } from '../src/matrix/scripted.js';
import type { RegisterInput, RegisterOutput } from '../src/models/register.js';

const TIMEOUT = 120_000;

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

describe('scripted anomalies', () => {
  it('a serializable read from a cut-off follower returns the value before an acknowledged write', {
    timeout: TIMEOUT,
  }, async () => {
    const result = await staleSerializableRead();
    expect(result.valid).toBe(false);
    expect(result.faults.map((f) => f.name)).toEqual(['partition']);
    expect(result.anomalies).toHaveLength(1);
    const [anomaly] = result.anomalies;
    expect(anomaly!.minimal).toBe(true);
    const key = 'etcdkit-verify/scripted/stale-read';
    const put1 = result.history[0]!;
    expect(steps(anomaly!.ops)).toEqual([
      `p0 put ${key}=v1 -> ok`,
      `p0 put ${key}=v2 -> ok`,
      `p1 get ${key} -> v1@${(put1.output as { revision: bigint }).revision}`,
    ]);
    // The stale read began after v2 was acknowledged, while the follower was cut off.
    const [, put2, get] = anomaly!.ops;
    expect(get!.start).toBeGreaterThan(put2!.end);
    expect(get!.end).toBeLessThan(result.faults[0]!.end);
    expect(anomaly!.ops.map((op) => op.id)).toEqual([...result.expectedAnomaly]);
  });

  it('an in-memory etcdkit-server killed with -9 forgets a write it acknowledged', {
    timeout: TIMEOUT,
  }, async () => {
    const result = await lostOnKill9();
    expect(result.valid).toBe(false);
    expect(result.faults.map((f) => f.name)).toEqual(['kill']);
    expect(result.anomalies).toHaveLength(1);
    const [anomaly] = result.anomalies;
    expect(anomaly!.minimal).toBe(true);
    const key = 'etcdkit-verify/scripted/lost';
    expect(steps(anomaly!.ops)).toEqual([`p0 put ${key}=v1 -> ok`, `p1 get ${key} -> absent@0`]);
    expect(anomaly!.ops.map((op) => op.id)).toEqual([...result.expectedAnomaly]);
  });
});
