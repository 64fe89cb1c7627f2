// Hand-built and generated histories for the checker's tests.
import type { Operation, OperationStatus } from '../src/history.js';
import type { RegisterInput, RegisterOutput } from '../src/models/register.js';

/** Builds a history from rows, numbering the operations in order of their start. */
export function history<I, O>(
  rows: readonly {
    p: number;
    start: number;
    end?: number;
    input: I;
    output?: O;
    status?: OperationStatus;
  }[],
): Operation<I, O>[] {
  return [...rows]
    .sort((a, b) => a.start - b.start)
    .map((row, id) => {
      const status = row.status ?? 'ok';
      return {
        id,
        process: row.p,
        input: row.input,
        output: row.output,
        status,
        start: row.start,
        end: status === 'unknown' ? Number.POSITIVE_INFINITY : (row.end ?? row.start + 1),
      };
    });
}

/** A deterministic pseudo-random source (mulberry32). */
export function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * A linearizable register history of `count` operations by `processes` processes on `keys`
 * keys: each operation takes effect at a random instant inside its interval, its answer computed
 * from a real register; about 1% of writes end unknown (half of those never take effect).
 */
export function linearizableRegisterHistory(
  count: number,
  options: { processes?: number; keys?: number; seed?: number } = {},
): Operation<RegisterInput, RegisterOutput>[] {
  const processes = options.processes ?? 8;
  const keys = options.keys ?? 3;
  const next = random(options.seed ?? 1);
  const clocks = new Array<number>(processes).fill(0);
  type Draft = {
    p: number;
    start: number;
    end: number;
    at: number;
    input: RegisterInput;
    status: OperationStatus;
    applies: boolean;
    output?: RegisterOutput;
  };
  const drafts: Draft[] = [];
  for (let i = 0; i < count; i++) {
    // The process that is free first runs next, so processes overlap as they would.
    let p = 0;
    for (let q = 1; q < processes; q++) if (clocks[q]! < clocks[p]!) p = q;
    const start = clocks[p]! + next() * 2;
    const end = start + 0.5 + next() * 5;
    const key = `k${Math.floor(next() * keys)}`;
    const r = next();
    const value = `v${i}`;
    const input: RegisterInput =
      r < 0.5
        ? { type: 'get', key }
        : r < 0.75
          ? { type: 'put', key, value }
          : { type: 'cas', key, expect: `v${Math.max(0, i - 1 - Math.floor(next() * 8))}`, value };
    const unknown = input.type !== 'get' && next() < 0.01;
    drafts.push({
      p,
      start,
      end,
      at: start + next() * (end - start),
      input,
      status: unknown ? 'unknown' : 'ok',
      applies: !unknown || next() < 0.5,
    });
    clocks[p] = unknown ? end + 20 : end;
  }
  const state = new Map<string, { value: string | undefined; revision: bigint }>();
  let revision = 1n;
  for (const d of [...drafts].sort((a, b) => a.at - b.at)) {
    if (!d.applies) continue;
    const s = state.get(d.input.key) ?? { value: undefined, revision: 0n };
    const input = d.input;
    if (input.type === 'get') d.output = { type: 'get', value: s.value, modRevision: s.revision };
    else if (input.type === 'put') {
      revision++;
      state.set(input.key, { value: input.value, revision });
      d.output = { type: 'put', revision };
    } else if (input.type === 'cas') {
      const holds = s.value === input.expect;
      if (holds) state.set(input.key, { value: input.value, revision: ++revision });
      d.output = holds
        ? { type: 'cas', succeeded: true, revision }
        : {
            type: 'cas',
            succeeded: false,
            revision,
            current: { value: s.value, modRevision: s.revision },
          };
    }
  }
  return history(
    drafts.map((d) => ({
      p: d.p,
      start: d.start,
      end: d.end,
      input: d.input,
      output: d.status === 'ok' ? d.output : undefined,
      status: d.status,
    })),
  );
}
