import { describe, expect, it } from 'vitest';
import {
  AuthFailedError,
  CompactedError,
  DeadlineExceededError,
  EtcdError,
  fromTransportError,
  LeaseNotFoundError,
  OutcomeUnknownError,
  RequestTimeoutError,
  RequestTooLargeError,
  UnavailableError,
  UnimplementedError,
  UnknownEtcdError,
} from '../src/errors.js';
import { GrpcStatus, TransportError } from '../src/transport/types.js';

const failure = (code: GrpcStatus, details: string) =>
  new TransportError({ code, details, metadata: {}, sent: true });

describe('typed errors', () => {
  it('map an exact etcd message to its named class with code, message, status and cause', () => {
    const cause = failure(GrpcStatus.NotFound, 'etcdserver: requested lease not found');
    const error = fromTransportError(cause);
    expect(error).toBeInstanceOf(LeaseNotFoundError);
    expect(error).toBeInstanceOf(EtcdError);
    expect(error.name).toBe('LeaseNotFoundError');
    expect(error.code).toBe('LEASE_NOT_FOUND');
    expect(error.message).toBe('etcdserver: requested lease not found');
    expect(error.grpcStatus).toBe(GrpcStatus.NotFound);
    expect(error.cause).toBe(cause);
  });

  it('expose the exact etcd message on each server error class', () => {
    expect(CompactedError.etcdMessage).toBe(
      'etcdserver: mvcc: required revision has been compacted',
    );
    expect(new CompactedError().message).toBe(CompactedError.etcdMessage);
    expect(new CompactedError().code).toBe('COMPACTED');
  });

  it('fold the variants of "request timed out" into one class', () => {
    const error = fromTransportError(
      failure(
        GrpcStatus.Unavailable,
        'etcdserver: request timed out, possibly due to previous leader failure',
      ),
    );
    expect(error).toBeInstanceOf(RequestTimeoutError);
    expect(error.message).toBe(
      'etcdserver: request timed out, possibly due to previous leader failure',
    );
  });

  it('map etcd 3.4\'s timed-out proposal (Unknown "context deadline exceeded") to RequestTimeoutError', () => {
    const error = fromTransportError(failure(GrpcStatus.Unknown, 'context deadline exceeded'));
    expect(error).toBeInstanceOf(RequestTimeoutError);
    expect(error.grpcStatus).toBe(GrpcStatus.Unknown);
    expect(error.message).toBe('context deadline exceeded');
    // The same words under DeadlineExceeded stay a deadline.
    expect(
      fromTransportError(failure(GrpcStatus.DeadlineExceeded, 'context deadline exceeded')),
    ).toBeInstanceOf(DeadlineExceededError);
  });

  it("map etcd 3.4's no-password message to AuthFailedError", () => {
    const error = fromTransportError(
      failure(
        GrpcStatus.Unknown,
        'auth: authentication failed, password was given for no password user',
      ),
    );
    expect(error).toBeInstanceOf(AuthFailedError);
    expect(error.grpcStatus).toBe(GrpcStatus.Unknown);
  });

  it('fall back to the status code for messages etcd does not define', () => {
    expect(fromTransportError(failure(GrpcStatus.Unimplemented, 'unknown method'))).toBeInstanceOf(
      UnimplementedError,
    );
    expect(fromTransportError(failure(GrpcStatus.Unavailable, 'connection reset'))).toBeInstanceOf(
      UnavailableError,
    );
    expect(
      fromTransportError(
        failure(GrpcStatus.ResourceExhausted, 'Received message larger than max (3 vs 2)'),
      ),
    ).toBeInstanceOf(RequestTooLargeError);
    const unknown = fromTransportError(failure(GrpcStatus.Internal, 'boom'));
    expect(unknown).toBeInstanceOf(UnknownEtcdError);
    expect(unknown.grpcStatus).toBe(GrpcStatus.Internal);
    expect(unknown.message).toBe('boom');
  });

  it('keep the cause of an outcome-unknown write', () => {
    const cause = new RequestTimeoutError();
    const error = new OutcomeUnknownError({ cause });
    expect(error.code).toBe('OUTCOME_UNKNOWN');
    expect(error.cause).toBe(cause);
    expect(error.name).toBe('OutcomeUnknownError');
  });
});
