// The frame of every conformance suite: declared once per backend through the testkit (the
// embedded server and a real etcd, which CI requires), each test on a server of its own.
import { type BackendName, describeEachBackend } from '@etcdkit/testkit';
import { afterEach } from 'vitest';
import { type CallError, status } from '../support/grpc-client.js';
import { kv } from '../support/kv.js';
import type { TestServer } from '../support/test-server.js';
import { CONFORMANCE_BACKENDS, type ServerLimits, startFreshServer } from './fresh-server.js';

/** A fresh server and the KV shorthands bound to it. */
export interface FreshServer extends TestServer {
  readonly api: ReturnType<typeof kv>;
}

/** What a conformance suite body gets. */
export interface ConformanceContext {
  /** `embedded` or `etcd`. */
  readonly backend: BackendName;
  /** Starts a server with an empty store for the current test; it is stopped after the test. */
  fresh(limits?: ServerLimits): Promise<FreshServer>;
}

/**
 * Declares `body` for the embedded server and for real etcd. Every test starts its own server
 * with {@link ConformanceContext.fresh}, so revisions are the absolute ones of a new store.
 */
export function describeConformance(
  title: string,
  body: (context: ConformanceContext) => void,
): void {
  describeEachBackend(
    `conformance: ${title}`,
    ({ name }) => {
      const started: TestServer[] = [];
      afterEach(async () => {
        await Promise.all(started.splice(0).map((server) => server.stop()));
      });
      body({
        backend: name,
        async fresh(limits) {
          const server = await startFreshServer(name, limits);
          started.push(server);
          return { ...server, api: kv(server) };
        },
      });
    },
    { only: CONFORMANCE_BACKENDS },
  );
}

/** gRPC status codes the conformance suites expect. */
export const Code = {
  INVALID_ARGUMENT: 3,
  NOT_FOUND: 5,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
} as const;

/** etcd's errors, as status code and exact message. */
export const Errors = {
  emptyKey: status(Code.INVALID_ARGUMENT, 'etcdserver: key is not provided'),
  keyNotFound: status(Code.INVALID_ARGUMENT, 'etcdserver: key not found'),
  valueProvided: status(Code.INVALID_ARGUMENT, 'etcdserver: value is provided'),
  leaseProvided: status(Code.INVALID_ARGUMENT, 'etcdserver: lease is provided'),
  tooManyOps: status(Code.INVALID_ARGUMENT, 'etcdserver: too many operations in txn request'),
  duplicateKey: status(Code.INVALID_ARGUMENT, 'etcdserver: duplicate key given in txn request'),
  compacted: status(Code.OUT_OF_RANGE, 'etcdserver: mvcc: required revision has been compacted'),
  future: status(Code.OUT_OF_RANGE, 'etcdserver: mvcc: required revision is a future revision'),
  tooLargeTtl: status(Code.OUT_OF_RANGE, 'etcdserver: too large lease TTL'),
  noSpace: status(Code.RESOURCE_EXHAUSTED, 'etcdserver: mvcc: database space exceeded'),
  leaseNotFound: status(Code.NOT_FOUND, 'etcdserver: requested lease not found'),
  leaseExists: status(Code.FAILED_PRECONDITION, 'etcdserver: lease already exists'),
} satisfies Record<string, CallError>;
