// Observations of an election with a long-lived caller signal leave nothing on it once they end:
// AbortSignal.any() used to leave one registration per observe() on it until it aborted
// (nodejs/node#55351).
import { EmbeddedEtcd } from '@etcdkit/server-embedded';
import { abortRegistrations } from '@etcdkit/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Etcd } from '../../src/etcd.js';

/** Observations per test: each used to leave one registration behind. */
const ROUNDS = 50;

describe('signal registrations of finished observations (embedded server)', () => {
  let server: EmbeddedEtcd;
  let etcd: Etcd;

  beforeAll(async () => {
    server = await EmbeddedEtcd.start();
    etcd = new Etcd({ endpoints: [...server.endpoints] });
  });
  afterAll(async () => {
    await etcd?.close();
    await server?.stop();
  });

  it.each([
    ['resuming', true],
    ['single-stream', false],
  ])(
    '%s observe() calls left after the first leader leave the caller signal as it was',
    async (_, resume) => {
      const name = `signal-registrations/${resume}`;
      const lease = await etcd.lease.grant(60);
      await etcd.election.campaign(name, 'one', { lease });
      const caller = new AbortController();
      const before = abortRegistrations(caller.signal);
      const seen: string[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        for await (const kv of etcd.election.observe(name, { signal: caller.signal, resume })) {
          seen.push(new TextDecoder().decode(kv.value));
          break;
        }
      }
      expect(seen).toEqual(Array.from({ length: ROUNDS }, () => 'one'));
      expect(abortRegistrations(caller.signal)).toBe(before);
      await lease.revoke();
    },
  );
});
