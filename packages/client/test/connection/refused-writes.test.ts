// Writes a server provably never processed (issue 31): a stream refused with RST_STREAM
// REFUSED_STREAM, a stream above a GOAWAY's last-stream-id. They are retried like reads, on the
// same endpoint or another; given up on, they fail with WriteNotAppliedError, never with
// OutcomeUnknownError; none is applied twice. Run on every transport (ETCDKIT_TEST_TRANSPORT).
import { describeEachBackend } from '@etcdkit/testkit';
import { afterEach, expect, it } from 'vitest';
import { Connection } from '../../src/connection/connection.js';
import { OutcomeUnknownError, UnavailableError, WriteNotAppliedError } from '../../src/errors.js';
import { etcdserverpb_KV } from '../../src/generated/methods.js';
import {
  gracefulGoaway,
  type RawRequest,
  type RawServer,
  startRawServer,
} from './raw-h2-server.js';

const bytes = (s: string) => new TextEncoder().encode(s);
const text = (b: Uint8Array | null | undefined) => new TextDecoder().decode(b ?? new Uint8Array());

let raw: RawServer | undefined;
let conn: Connection | undefined;
afterEach(async () => {
  await conn?.close();
  await raw?.close();
  conn = undefined;
  raw = undefined;
});

/** A server that refuses every stream. */
const refuseAll = () =>
  startRawServer((connection, request) => connection.refuse(request.streamId));

/**
 * A server that, on each connection, waits for `batch` requests, answers the first, then goes away
 * with it as the last stream processed: the others are refused by the GOAWAY.
 */
const goAwayAfterFirst = (batch: number) => {
  const waiting = new Map<object, RawRequest[]>();
  return startRawServer((connection, request) => {
    const got = waiting.get(connection) ?? [];
    waiting.set(connection, got);
    got.push(request);
    if (got.length === 1) {
      // Fewer in flight than the batch (the last puts): go away after a moment anyway.
      setTimeout(() => {
        if (got.length < batch) goAway(connection, got);
      }, 300);
    }
    if (got.length === batch) goAway(connection, got);
  });
  function goAway(
    connection: Parameters<Parameters<typeof startRawServer>[0]>[0],
    got: RawRequest[],
  ) {
    if (got.length === 0) return;
    const [first] = got.splice(0, got.length);
    connection.answer(first!);
    connection.send(gracefulGoaway(first!.streamId));
    connection.end();
  }
};

describeEachBackend('writes a server never processed', ({ backend, prefix }) => {
  async function putAll(c: Connection, keys: readonly string[]) {
    return Promise.allSettled(
      keys.map((key) =>
        c.unary(etcdserverpb_KV.Put, { key: bytes(key), value: bytes('v') }, 'write'),
      ),
    );
  }

  /** Each key's version on the backend: 1 for a write applied once, 0 for one not applied. */
  async function versions(keys: readonly string[]): Promise<number[]> {
    const direct = new Connection({ endpoints: backend().endpoints });
    try {
      const out: number[] = [];
      for (const key of keys) {
        const res = await direct.unary(etcdserverpb_KV.Range, { key: bytes(key) }, 'read');
        out.push(Number(res.kvs[0]?.version ?? 0));
      }
      return out;
    } finally {
      await direct.close();
    }
  }

  it('retries writes refused with REFUSED_STREAM on the next endpoint, applying each once', async () => {
    raw = await refuseAll();
    conn = new Connection({ endpoints: [raw.endpoint, ...backend().endpoints] });
    const keys = Array.from({ length: 5 }, (_, i) => `${prefix()}refused-${i}`);
    const results = await putAll(conn, keys);
    expect(results.map((r) => r.status)).toEqual(keys.map(() => 'fulfilled'));
    expect(raw.received.length).toBeGreaterThan(0);
    expect(raw.applied).toEqual([]);
    expect(await versions(keys)).toEqual(keys.map(() => 1));
  });

  it('retries writes above a GOAWAY last-stream-id, applying each once', async () => {
    raw = await goAwayAfterFirst(3);
    conn = new Connection({ endpoints: [raw.endpoint, ...backend().endpoints] });
    const keys = Array.from({ length: 3 }, (_, i) => `${prefix()}goaway-${i}`);
    const results = await putAll(conn, keys);
    expect(results.map((r) => r.status)).toEqual(keys.map(() => 'fulfilled'));
    // The raw server applied the first; the others went to the backend, once each.
    expect(raw.applied).toHaveLength(1);
    const applied = new Set(raw.applied);
    const elsewhere = keys.filter((k) => !applied.has(k));
    expect(elsewhere).toHaveLength(2);
    expect(await versions(elsewhere)).toEqual([1, 1]);
    expect(await versions([...applied])).toEqual([0]);
  });
});

it('fails a write every attempt of which was refused with WriteNotAppliedError', async () => {
  raw = await refuseAll();
  const retries: string[] = [];
  conn = new Connection({
    endpoints: [raw.endpoint],
    retry: { maxAttempts: 3, minDelayMs: 10, maxDelayMs: 20 },
    hooks: { onRetry: (e) => retries.push(e.error.code) },
  });
  const error = await conn
    .unary(etcdserverpb_KV.Put, { key: bytes('k'), value: bytes('v') }, 'write')
    .catch((e: unknown) => e);
  expect(error).toBeInstanceOf(WriteNotAppliedError);
  expect(error).not.toBeInstanceOf(OutcomeUnknownError);
  expect((error as WriteNotAppliedError).code).toBe('NOT_APPLIED');
  expect((error as Error).message).toMatch(/^the write was not applied: .*refused/i);
  expect((error as Error).cause).toBeInstanceOf(UnavailableError);
  // Retried like a read: the budget's 2 retries, each refused again.
  expect(retries).toEqual(['NOT_APPLIED', 'NOT_APPLIED']);
  expect(raw.received).toHaveLength(3);
  expect(raw.applied).toEqual([]);
});

it('retries writes above a GOAWAY last-stream-id on the same server until each is applied once', async () => {
  raw = await goAwayAfterFirst(3);
  conn = new Connection({
    endpoints: [raw.endpoint],
    retry: { maxAttempts: 8, minDelayMs: 10, maxDelayMs: 50 },
  });
  const keys = ['g0', 'g1', 'g2'];
  const results = await putAll(conn, keys);
  expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled']);
  // One connection per write: each applied exactly once, none twice.
  expect([...raw.applied].sort()).toEqual(keys);
  expect(raw.connections).toBeGreaterThanOrEqual(3);

  async function putAll(c: Connection, all: readonly string[]) {
    return Promise.allSettled(
      all.map((key) =>
        c.unary(etcdserverpb_KV.Put, { key: bytes(key), value: bytes(text(bytes(key))) }, 'write'),
      ),
    );
  }
});
