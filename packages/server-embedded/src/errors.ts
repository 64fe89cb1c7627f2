// Errors the server answers with. Clients match them by gRPC status and exact message (etcd's own
// clients compare the message strings), so etcd's come from the client's catalog (etcdErrors), the
// one table both sides read; the few only this server sends are below.
import {
  type EtcdErrorVariantName,
  type EtcdServerErrorCode,
  etcdErrors,
  etcdErrorVariants,
} from '@etcdkit/client';
import { GrpcCode } from '@etcdkit/client/internal';

/**
 * gRPC status codes under the names of gRPC's specification (UNAVAILABLE...): the client's table
 * (its GrpcStatus), which both roles read.
 */
export { GrpcCode };

// The errors only this server sends: statuses of its own limits, never etcd's words.
const embeddedErrors = {
  RANGE_STREAM_SORT: [GrpcCode.UNIMPLEMENTED, 'RangeStream does not support custom sort orders'],
  RANGE_STREAM_FILTER: [GrpcCode.UNIMPLEMENTED, 'RangeStream does not support revision filters'],
  UNKNOWN_SERVICE: [GrpcCode.NOT_FOUND, 'unknown service'],
  // An embedded member cannot add a voting member, which would never start (etcd accepts the add,
  // and a single member then loses quorum). See docs/embedded-server.md.
  VOTING_MEMBER_ADD: [
    GrpcCode.UNIMPLEMENTED,
    'etcdkit embedded server: adding a voting member is not supported (no process would start for it; etcd would accept the add and wait for the new member to join)',
  ],
} as const satisfies Record<string, readonly [GrpcCode, string]>;

const definitions: Readonly<Record<ServerErrorCode, readonly [GrpcCode, string]>> = {
  ...(Object.fromEntries([
    ...Object.entries(etcdErrors).map(([code, [status, message]]) => [code, [status, message]]),
    ...Object.entries(etcdErrorVariants).map(([name, variant]) => [
      name,
      [variant.status, variant.message],
    ]),
  ]) as Record<EtcdServerErrorCode | EtcdErrorVariantName, readonly [GrpcCode, string]>),
  ...embeddedErrors,
};

/** Stable identifier of each error the server answers with. */
export type ServerErrorCode =
  | EtcdServerErrorCode
  | EtcdErrorVariantName
  | keyof typeof embeddedErrors;

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

  /** The error as etcd prints it in text (a watch's cancel reason): grpc-go's form of the status. */
  toGoText(): string {
    return `rpc error: code = ${GO_CODE_NAMES[this.grpcCode]} desc = ${this.message}`;
  }
}

// grpc-go's names of the codes (codes.Code.String()), as they appear in printed errors.
const GO_CODE_NAMES: Readonly<Record<GrpcCode, string>> = {
  0: 'OK',
  1: 'Canceled',
  2: 'Unknown',
  3: 'InvalidArgument',
  4: 'DeadlineExceeded',
  5: 'NotFound',
  6: 'AlreadyExists',
  7: 'PermissionDenied',
  8: 'ResourceExhausted',
  9: 'FailedPrecondition',
  10: 'Aborted',
  11: 'OutOfRange',
  12: 'Unimplemented',
  13: 'Internal',
  14: 'Unavailable',
  15: 'DataLoss',
  16: 'Unauthenticated',
};
