// The names this package emits, in one place: the attribute keys of spans and metric points, and the
// metric instruments. OpenTelemetry's RPC conventions where they apply, etcd's own under `etcd.`.

/** Attribute keys put on spans and metric points. */
export const EtcdAttributes = {
  /** Always `grpc` (OpenTelemetry's RPC conventions). */
  RPC_SYSTEM: 'rpc.system',
  /** The gRPC service, e.g. `etcdserverpb.KV`. */
  RPC_SERVICE: 'rpc.service',
  /** The gRPC method, e.g. `Range`. */
  RPC_METHOD: 'rpc.method',
  /** The gRPC status code the call ended with (0 for OK). */
  RPC_GRPC_STATUS_CODE: 'rpc.grpc.status_code',
  /** Host (or IP address) of the endpoint the call's last attempt went to. */
  SERVER_ADDRESS: 'server.address',
  /** Port of that endpoint. */
  SERVER_PORT: 'server.port',
  /** The `code` of the EtcdError a call failed with, e.g. `OUTCOME_UNKNOWN`, `UNAVAILABLE`. */
  ERROR_TYPE: 'error.type',
  /** The request's key, decoded as UTF-8 (invalid bytes become U+FFFD). */
  ETCD_KEY: 'etcd.key',
  /** The request's range end, when it has one (`\u0000` means every key from `etcd.key` on). */
  ETCD_RANGE_END: 'etcd.range_end',
  /** True when the range is exactly the keys starting with `etcd.key` (a prefix request). */
  ETCD_PREFIX: 'etcd.prefix',
  /** The store revision of the response header: for a write, the revision it created. */
  ETCD_REVISION: 'etcd.revision',
  /** Attempts after the first: 0 when the call went through at once. */
  ETCD_RETRIES: 'etcd.retries',
  /** On failed calls: true when the write may or may not have been applied (OutcomeUnknownError). */
  ETCD_OUTCOME_UNKNOWN: 'etcd.outcome_unknown',
  /** The call's retry policy: `read`, `write` or `guarded-write`. */
  ETCD_RETRY_POLICY: 'etcd.retry_policy',
  /** Whether a Txn's compares held (it ran its success ops). */
  ETCD_TXN_SUCCEEDED: 'etcd.txn.succeeded',
  /** Why a lease handle ended: `expired`, `timeout`, `revoked`, `released`, `client-closed`. */
  ETCD_LEASE_LOST_REASON: 'etcd.lease.lost_reason',
  /** The name of a lock (a Mutex's name). */
  ETCD_LOCK_NAME: 'etcd.lock.name',
} as const;

/** Names of the metric instruments. Durations are in seconds, as OpenTelemetry recommends. */
export const EtcdMetrics = {
  /** Histogram, `s`: wall time of each unary call, retries included. */
  CALL_DURATION: 'etcd.client.call.duration',
  /** Counter, `{retry}`: failed attempts that were retried. */
  RETRIES: 'etcd.client.retries',
  /** Counter, `{failover}`: moves of the client's calls to another endpoint. */
  FAILOVERS: 'etcd.client.failovers',
  /** Histogram, `{revision}`: per watch event, how far the store's head was past it when sent. */
  WATCH_LAG: 'etcd.client.watch.lag',
  /** Histogram, `s`: round trip of each lease keepalive. */
  LEASE_KEEPALIVE_DURATION: 'etcd.client.lease.keepalive.duration',
  /** Counter, `{lease}`: lease handles that ended, by `etcd.lease.lost_reason`. */
  LEASE_LOST: 'etcd.client.lease.lost',
  /** Histogram, `s`: how long acquiring a lock waited, failed acquisitions included. */
  LOCK_WAIT_DURATION: 'etcd.lock.wait.duration',
} as const;
