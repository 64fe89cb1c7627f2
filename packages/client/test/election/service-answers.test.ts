// The Lock and Election services answer every error with status Unknown. Through the `write` retry
// policy such an answer becomes OutcomeUnknownError; the clients turn it back into the server's
// typed error when the message is a definite answer, and keep it unknown otherwise.
import { describe, expect, it } from 'vitest';
import { judge } from '../../src/connection/retry.js';
import type { Rpc } from '../../src/connection/types.js';
import { ElectionClient } from '../../src/election/election.js';
import { LockClient } from '../../src/election/lock.js';
import {
  ElectionNotLeaderError,
  LeaderChangedError,
  LeaseNotFoundError,
  OutcomeUnknownError,
} from '../../src/errors.js';
import { GrpcStatus, TransportError } from '../../src/transport/types.js';

/** An Rpc whose unary calls fail as the connection reports an Unknown answer to a sent call. */
function failingWith(details: string): Rpc {
  const fail = (policy: Parameters<typeof judge>[1]) =>
    Promise.reject(
      judge(
        new TransportError({ code: GrpcStatus.Unknown, details, metadata: {}, sent: true }),
        policy,
      ).error,
    );
  return {
    unary: (_method, _request, policy) => fail(policy),
    serverStream: () => {
      throw new Error('not used');
    },
    bidiStream: () => Promise.reject(new Error('not used')),
  };
}

const leader = { name: new Uint8Array(1), key: new Uint8Array(1), rev: 1n, lease: 1n };

describe('answers of the Lock and Election services', () => {
  it('a known etcd message sent as Unknown is the typed error, not OutcomeUnknownError', async () => {
    const lock = new LockClient(failingWith('etcdserver: requested lease not found'));
    await expect(lock.lock('l', { lease: 1n })).rejects.toBeInstanceOf(LeaseNotFoundError);
    const election = new ElectionClient(failingWith('election: not leader'));
    const error = await election.proclaim(leader, 'v').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ElectionNotLeaderError);
    expect(error).toMatchObject({ grpcStatus: GrpcStatus.Unknown });
  });

  it('a message meaning the server could not finish stays OutcomeUnknownError', async () => {
    const lock = new LockClient(failingWith('etcdserver: leader changed'));
    const error = await lock.lock('l', { lease: 1n }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OutcomeUnknownError);
    expect((error as OutcomeUnknownError).cause).toBeInstanceOf(LeaderChangedError);
  });

  it('an unknown message stays OutcomeUnknownError', async () => {
    const election = new ElectionClient(failingWith('something odd'));
    await expect(election.campaign('e', 'v')).rejects.toBeInstanceOf(OutcomeUnknownError);
  });
});
