// Errors the server answers with. Clients match them by gRPC status and exact message (etcd's own
// clients compare the message strings), so both are copied from etcd's rpctypes verbatim.

/** gRPC status codes (https://grpc.github.io/grpc/core/md_doc_statuscodes.html). */
export const GrpcCode = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  DATA_LOSS: 15,
  UNAUTHENTICATED: 16,
} as const;

/** A gRPC status code. */
export type GrpcCode = (typeof GrpcCode)[keyof typeof GrpcCode];

const definitions = {
  EMPTY_KEY: [GrpcCode.INVALID_ARGUMENT, 'etcdserver: key is not provided'],
  KEY_NOT_FOUND: [GrpcCode.INVALID_ARGUMENT, 'etcdserver: key not found'],
  VALUE_PROVIDED: [GrpcCode.INVALID_ARGUMENT, 'etcdserver: value is provided'],
  LEASE_PROVIDED: [GrpcCode.INVALID_ARGUMENT, 'etcdserver: lease is provided'],
  TOO_MANY_TXN_OPS: [GrpcCode.INVALID_ARGUMENT, 'etcdserver: too many operations in txn request'],
  DUPLICATE_KEY: [GrpcCode.INVALID_ARGUMENT, 'etcdserver: duplicate key given in txn request'],
  INVALID_SORT_OPTION: [GrpcCode.INVALID_ARGUMENT, 'etcdserver: invalid sort option'],
  REQUEST_TOO_LARGE: [GrpcCode.INVALID_ARGUMENT, 'etcdserver: request is too large'],
  COMPACTED: [GrpcCode.OUT_OF_RANGE, 'etcdserver: mvcc: required revision has been compacted'],
  FUTURE_REVISION: [
    GrpcCode.OUT_OF_RANGE,
    'etcdserver: mvcc: required revision is a future revision',
  ],
  LEASE_NOT_FOUND: [GrpcCode.NOT_FOUND, 'etcdserver: requested lease not found'],
  RANGE_STREAM_SORT: [GrpcCode.UNIMPLEMENTED, 'RangeStream does not support custom sort orders'],
  RANGE_STREAM_FILTER: [GrpcCode.UNIMPLEMENTED, 'RangeStream does not support revision filters'],
  UNKNOWN_SERVICE: [GrpcCode.NOT_FOUND, 'unknown service'],
} as const satisfies Record<string, readonly [GrpcCode, string]>;

/** Stable identifier of each error the server answers with. */
export type ServerErrorCode = keyof typeof definitions;

/** A request failure with the gRPC status and message etcd answers for it. */
export class EtcdServerError extends Error {
  /** Stable identifier of the failure. */
  readonly code: ServerErrorCode;
  /** The gRPC status the failure is sent with. */
  readonly grpcCode: GrpcCode;

  constructor(code: ServerErrorCode, options?: { cause?: unknown }) {
    const [grpcCode, message] = definitions[code];
    super(message, options);
    this.name = 'EtcdServerError';
    this.code = code;
    this.grpcCode = grpcCode;
  }

  /** The exact etcd message of `code`. */
  static messageOf(code: ServerErrorCode): string {
    return definitions[code][1];
  }
}
