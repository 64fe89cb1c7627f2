// The resume rules every long-lived stream shares (watch, lease keepalive, observe): the give-up
// predicate, the one token refresh, the pacing of reopens and the outage events. No server.
import { describe, expect, it } from 'vitest';
import { ResumableStream, type StreamOutage } from '../../src/connection/resumable-stream.js';
import { streamFailure } from '../../src/connection/retry.js';
import type { Rpc } from '../../src/connection/types.js';
import {
  AbortedError,
  AuthFailedError,
  ClientClosedError,
  type EtcdError,
  InvalidArgumentError,
  InvalidAuthTokenError,
  PermissionDeniedError,
  RequestTooLargeError,
  UnavailableError,
  UnimplementedError,
} from '../../src/errors.js';

/** An Rpc that only counts token refreshes and redials; refreshes fail with `refreshError`. */
function fakeRpc(refreshError?: EtcdError) {
  const seen = { refreshes: 0, redialled: [] as unknown[], closed: false };
  const rpc: Rpc = {
    get closed() {
      return seen.closed;
    },
    unary: () => Promise.reject(new Error('no call expected')),
    serverStream: () => {
      throw new Error('no call expected');
    },
    bidiStream: () => Promise.reject(new Error('no call expected')),
    refreshToken: async () => {
      seen.refreshes++;
      if (refreshError) throw refreshError;
    },
    redial: (endpoint?: string) => {
      seen.redialled.push(endpoint);
      throw new Error('redial failed');
    },
  };
  return { rpc, seen };
}

const BACKOFF = { baseMs: 100, maxMs: 400, jitter: false } as const;

describe('streamFailure', () => {
  it('resumes after a lost stream, refreshes after a token refusal, gives up on the rest', () => {
    expect(streamFailure(new UnavailableError())).toBe('resume');
    expect(streamFailure(new InvalidAuthTokenError())).toBe('token');
    expect(streamFailure(new PermissionDeniedError())).toBe('token');
    expect(streamFailure(new ClientClosedError())).toBe('permanent');
    expect(streamFailure(new AbortedError())).toBe('permanent');
    expect(streamFailure(new InvalidArgumentError('bad'))).toBe('permanent');
    expect(streamFailure(new UnimplementedError())).toBe('permanent');
    expect(streamFailure(new AuthFailedError())).toBe('permanent');
    // Known only by its gRPC status (InvalidArgument).
    expect(streamFailure(new RequestTooLargeError())).toBe('permanent');
  });
});

describe('ResumableStream', () => {
  it('refreshes the token once until a stream answers, then gives up on the refusal', async () => {
    const { rpc, seen } = fakeRpc();
    const resume = new ResumableStream(rpc, { backoff: BACKOFF });
    const refused = new InvalidAuthTokenError();
    expect(await resume.failed(refused)).toBeUndefined();
    expect(await resume.failed(refused)).toBe(refused);
    expect(seen.refreshes).toBe(1);
    resume.answered();
    expect(await resume.failed(refused)).toBeUndefined();
    expect(seen.refreshes).toBe(2);
  });

  it('gives up with the refresh failure, or without refreshing when told not to', async () => {
    const closed = new ClientClosedError();
    expect(
      await new ResumableStream(fakeRpc(closed).rpc, { backoff: BACKOFF }).failed(
        new InvalidAuthTokenError(),
      ),
    ).toBe(closed);
    const { rpc, seen } = fakeRpc();
    const refused = new PermissionDeniedError();
    const resume = new ResumableStream(rpc, { backoff: BACKOFF, refreshesToken: false });
    expect(await resume.failed(refused)).toBe(refused);
    expect(seen.refreshes).toBe(0);
  });

  it('untilClosed goes on after any failure but the client closing, refreshing at each refusal', async () => {
    const { rpc, seen } = fakeRpc();
    const resume = new ResumableStream(rpc, { backoff: BACKOFF, untilClosed: true });
    expect(await resume.failed(new UnimplementedError())).toBeUndefined();
    expect(await resume.failed(new InvalidAuthTokenError())).toBeUndefined();
    expect(await resume.failed(new InvalidAuthTokenError())).toBeUndefined();
    expect(seen.refreshes).toBe(2);
    expect(resume.failures).toBe(3);
    const closed = new ClientClosedError();
    expect(await resume.failed(closed)).toBe(closed);
    seen.closed = true;
    expect(await resume.failed(new UnavailableError())).toBeInstanceOf(ClientClosedError);
  });

  it('paces reopens with the backoff after the immediate ones, and answered() starts over', async () => {
    const waits: number[] = [];
    const resume = new ResumableStream(fakeRpc().rpc, {
      backoff: BACKOFF,
      immediateReopens: 1,
      sleep: async (ms) => {
        waits.push(ms);
      },
    });
    const signal = new AbortController().signal;
    for (let i = 0; i < 5; i++) {
      await resume.failed(new UnavailableError());
      await resume.pause(signal);
    }
    resume.answered();
    await resume.pause(signal);
    await resume.failed(new UnavailableError());
    await resume.pause(signal);
    expect(waits).toEqual([100, 200, 400, 400]);
  });

  it('reports an outage once, and its end with the streams opened since', async () => {
    let clock = 1_000;
    const disconnects: EtcdError[] = [];
    const resumes: StreamOutage[] = [];
    const resume = new ResumableStream(fakeRpc().rpc, {
      backoff: BACKOFF,
      now: () => clock,
      onDisconnect: (error) => disconnects.push(error),
      onResume: (outage) => resumes.push(outage),
    });
    resume.opening();
    resume.answered();
    const lost = new UnavailableError({ message: 'lost' });
    await resume.failed(lost);
    resume.opening();
    await resume.failed(new UnavailableError({ message: 'again' }));
    resume.opening();
    clock += 250;
    resume.answered();
    expect(disconnects).toEqual([lost]);
    expect(resumes).toEqual([{ disconnectedMs: 250, attempts: 2 }]);
  });

  it('redials a stalled stream endpoint, ignoring what redial throws', () => {
    const { rpc, seen } = fakeRpc();
    new ResumableStream(rpc, { backoff: BACKOFF }).redial('a:2379');
    expect(seen.redialled).toEqual(['a:2379']);
  });
});
