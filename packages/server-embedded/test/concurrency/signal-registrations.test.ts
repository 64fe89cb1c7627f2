// Waiting Lock, Campaign and Observe calls leave nothing on the server's halt signal (it lives as
// long as the server) nor on a long-lived request signal once they end, whichever way they end:
// AbortSignal.any() used to leave one registration per call on each until it aborted
// (nodejs/node#55351), so a server that ran long grew without bound.
import type { v3electionpb } from '@etcdkit/client/protocol';
import { abortRegistrations } from '@etcdkit/testkit';
import { describe, expect, it } from 'vitest';
import { campaign, resign } from '../../src/concurrency/election.js';
import type { LocalClient } from '../../src/concurrency/local-client.js';
import { lock, unlock } from '../../src/concurrency/mutex.js';
import { EtcdServerError } from '../../src/errors.js';
import type { ServiceContext } from '../../src/services/context.js';
import { registerElectionService } from '../../src/services/election-service.js';
import type { ServiceRegistry } from '../../src/services/registry.js';
import { b } from '../support/bytes.js';
import { isPending, keyOf, settle, setup } from './concurrency-setup.js';

/** Calls per test: each used to leave at least one registration behind. */
const ROUNDS = 100;

/** The registrations on the halt signal and on a long-lived request signal. */
function counts(client: LocalClient, request: AbortSignal): number[] {
  return [abortRegistrations(client.halted), abortRegistrations(request)];
}

describe('signal registrations of finished server waits', () => {
  it('contended locks, granted, cancelled or lost, leave the halt and request signals as they were', async () => {
    const { client, grant, del } = setup();
    const [holder, waiter] = [grant(), grant()];
    const request = new AbortController().signal;
    const before = counts(client, request);
    for (let round = 0; round < ROUNDS; round++) {
      // Granted after a wait.
      let held = await lock(client, { name: b('l'), lease: holder, signal: request });
      const granted = lock(client, { name: b('l'), lease: waiter, signal: request });
      await settle();
      expect(await isPending(granted)).toBe(true);
      unlock(client, held.key);
      unlock(client, (await granted).key);
      // Cancelled while waiting, by a signal of its own.
      held = await lock(client, { name: b('l'), lease: holder, signal: request });
      const cancel = new AbortController();
      const cancelled = lock(client, { name: b('l'), lease: waiter, signal: cancel.signal });
      cancelled.catch(() => {});
      await settle();
      cancel.abort(new Error('cancelled'));
      await expect(cancelled).rejects.toThrow('cancelled');
      // Lost while waiting: its own key was deleted; it learns so on its turn.
      const lost = lock(client, { name: b('l'), lease: waiter, signal: request });
      lost.catch(() => {});
      await settle();
      del(keyOf('l', waiter));
      unlock(client, held.key);
      await expect(lost).rejects.toEqual(new EtcdServerError('LOCK_SESSION_EXPIRED'));
    }
    expect(counts(client, request)).toEqual(before);
  });

  it('contended campaigns, elected or cancelled, leave the halt and request signals as they were', async () => {
    const { client, grant } = setup();
    const [holder, waiter] = [grant(), grant()];
    const request = new AbortController().signal;
    const before = counts(client, request);
    for (let round = 0; round < ROUNDS; round++) {
      const first = await campaign(client, {
        name: b('e'),
        lease: holder,
        value: b('1'),
        signal: request,
      });
      const cancel = new AbortController();
      const cancelled = campaign(client, {
        name: b('e'),
        lease: waiter,
        value: b('2'),
        signal: cancel.signal,
      });
      cancelled.catch(() => {});
      await settle();
      cancel.abort(new Error('cancelled'));
      await expect(cancelled).rejects.toThrow('cancelled');
      const elected = campaign(client, {
        name: b('e'),
        lease: waiter,
        value: b('2'),
        signal: request,
      });
      await settle();
      expect(await isPending(elected)).toBe(true);
      resign(client, first.leader);
      resign(client, (await elected).leader);
    }
    expect(counts(client, request)).toEqual(before);
  });

  it('many waits at once listen to the halt signal without a MaxListenersExceededWarning', async () => {
    const { client, grant } = setup();
    const [holder, waiter] = [grant(), grant()];
    const names = Array.from({ length: 12 }, (_, i) => b(`l${i}`));
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on('warning', onWarning);
    // One signal per call, as each gRPC call has its own.
    const calls = names.map(() => new AbortController());
    try {
      for (const name of names) {
        await lock(client, { name, lease: holder, signal: new AbortController().signal });
      }
      const waiting = names.map((name, i) =>
        lock(client, { name, lease: waiter, signal: calls[i]!.signal }),
      );
      for (const wait of waiting) wait.catch(() => {});
      await settle();
      expect(abortRegistrations(client.halted)).toBe(names.length);
      for (const call of calls) call.abort(new Error('cancelled'));
      await Promise.allSettled(waiting);
      // process.emitWarning reports on a later tick.
      await settle();
    } finally {
      process.off('warning', onWarning);
    }
    expect(warnings.map((warning) => warning.name)).toEqual([]);
    expect(abortRegistrations(client.halted)).toBe(0);
  });

  it('Observe streams, cancelled, leave the halt signal as it was', async () => {
    const { client, grant, store } = setup();
    const never = new AbortController().signal;
    await campaign(client, { name: b('e'), lease: grant(), value: b('1'), signal: never });
    const observeHandler = electionObserve(client, store.revision);
    const before = abortRegistrations(client.halted);
    for (let round = 0; round < ROUNDS; round++) {
      const cancel = new AbortController();
      let sent = 0;
      const stream = observeHandler(
        { name: b('e') },
        async () => {
          sent++;
        },
        cancel.signal,
      );
      stream.catch(() => {});
      await settle();
      expect(sent).toBe(1);
      cancel.abort(new Error('cancelled'));
      await expect(stream).rejects.toThrow('cancelled');
    }
    expect(abortRegistrations(client.halted)).toBe(before);
  });
});

type ObserveHandler = (
  request: v3electionpb.LeaderRequest.$Properties,
  send: (message: unknown) => Promise<void>,
  signal: AbortSignal,
) => Promise<void>;

/** The Election service's Observe handler on `client`, registered with a stand-in registry. */
function electionObserve(client: LocalClient, revision: number): ObserveHandler {
  let handler: ((...args: unknown[]) => Promise<void>) | undefined;
  const registry = {
    unary: () => {},
    waitingUnary: () => {},
    // Observe is the service's only server stream.
    serverStream: (_method: unknown, registered: (...args: unknown[]) => Promise<void>) => {
      handler = registered;
    },
  } as unknown as ServiceRegistry;
  const context = {
    member: { clusterId: 1n, memberId: 2n },
    proposals: { term: 1 },
    store: { revision },
    authorizer: { credentialsOf: () => undefined },
  } as unknown as ServiceContext;
  registerElectionService(registry, context, client);
  const observe = handler;
  if (observe === undefined) throw new Error('the Election service registered no Observe');
  return (request, send, signal) => observe(request, send, {}, signal);
}
