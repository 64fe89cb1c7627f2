// The client's error classes and its message lookup are made from the catalog: each entry reads
// back as the class of its code, with the entry's message and status.
import { describe, expect, it } from 'vitest';
import { etcdErrors, etcdErrorVariants } from '../src/error-table.js';
import {
  DeadlineExceededError,
  EtcdError,
  fromTransportError,
  RequestTimeoutError,
  serverErrorClass,
  UserAlreadyExistsError,
} from '../src/errors.js';
import { GrpcStatus, TransportError } from '../src/transport/types.js';

const failure = (code: GrpcStatus, details: string) =>
  new TransportError({ code, details, metadata: {}, sent: true });

describe('the error catalog', () => {
  it.each(Object.entries(etcdErrors))('%s has a class made from its entry', (code, entry) => {
    const [status, message] = entry;
    const cls = serverErrorClass(message);
    if (cls === undefined) throw new Error(`no class for ${code}`);
    expect([cls.errorCode, cls.etcdMessage, cls.defaultStatus]).toEqual([code, message, status]);
    const error = fromTransportError(failure(status, message));
    expect(error).toBeInstanceOf(cls);
    expect(error).toBeInstanceOf(EtcdError);
    expect(error).toMatchObject({ code, message, grpcStatus: status, name: cls.name });
    expect(new cls()).toMatchObject({ code, message, grpcStatus: status });
  });

  it.each(Object.entries(etcdErrorVariants))('%s reads as the class of its entry', (_, variant) => {
    const error = fromTransportError(failure(variant.status, variant.message));
    expect(error).toMatchObject({ code: variant.means, message: variant.message });
  });

  it('gives every message one meaning', () => {
    const messages = [
      ...Object.values(etcdErrors).map(([, message]) => message),
      ...Object.values(etcdErrorVariants).map((variant) => variant.message),
    ];
    expect(new Set(messages).size).toBe(messages.length);
  });

  it('matches a variant bound to a status only under that status', () => {
    const { message } = etcdErrorVariants.PROPOSAL_TIMEOUT;
    expect(serverErrorClass(message)).toBeUndefined();
    expect(fromTransportError(failure(GrpcStatus.Unknown, message))).toBeInstanceOf(
      RequestTimeoutError,
    );
    expect(fromTransportError(failure(GrpcStatus.DeadlineExceeded, message))).toBeInstanceOf(
      DeadlineExceededError,
    );
  });

  it('keeps the public code of the user error etcd calls ErrUserAlreadyExist', () => {
    expect(new UserAlreadyExistsError().code).toBe('USER_ALREADY_EXISTS');
    expect(etcdErrors.USER_ALREADY_EXISTS[1]).toBe('etcdserver: user name already exists');
  });
});
