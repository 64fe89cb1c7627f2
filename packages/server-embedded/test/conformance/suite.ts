// The frame of every conformance suite: declared once per backend through the testkit (the
// embedded server and a real etcd, which CI requires), each test on a server of its own.
import { type EtcdServerErrorCode, etcdErrors } from '@etcdkit/client';
import { type BackendName, describeEachBackend } from '@etcdkit/testkit';
import { afterEach, describe } from 'vitest';
import { ETCD_VERSIONS, type EtcdVersion } from '../../src/etcd-version.js';
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
 * Declares `body` for real etcd (each version the run has) and for the embedded server answering
 * as each etcd version it knows (tests that differ by version read the server's Status version).
 * Every test starts its own server with {@link ConformanceContext.fresh}, so revisions are the
 * absolute ones of a new store.
 */
export function describeConformance(
  title: string,
  body: (context: ConformanceContext) => void,
): void {
  describeEachBackend(
    `conformance: ${title}`,
    ({ name }) => {
      if (name !== 'embedded') {
        declareOn(name, undefined, body);
        return;
      }
      for (const etcdVersion of ETCD_VERSIONS) {
        describe(`answering as etcd ${etcdVersion}`, () => declareOn(name, etcdVersion, body));
      }
    },
    { only: CONFORMANCE_BACKENDS },
  );
}

function declareOn(
  backend: BackendName,
  etcdVersion: EtcdVersion | undefined,
  body: (context: ConformanceContext) => void,
): void {
  const started: TestServer[] = [];
  afterEach(async () => {
    await Promise.all(started.splice(0).map((server) => server.stop()));
  });
  body({
    backend,
    async fresh(limits) {
      const server = await startFreshServer(backend, { ...limits, etcdVersion });
      started.push(server);
      return { ...server, api: kv(server) };
    },
  });
}

/** An entry of the client's error catalog, as a raw call fails with it. */
export function etcdError(code: EtcdServerErrorCode): CallError {
  const [grpcCode, message] = etcdErrors[code];
  return status(grpcCode, message);
}

/** etcd's errors, as status code and exact message (08-error-catalog pins every entry). */
export const Errors = {
  emptyKey: etcdError('EMPTY_KEY'),
  keyNotFound: etcdError('KEY_NOT_FOUND'),
  valueProvided: etcdError('VALUE_PROVIDED'),
  leaseProvided: etcdError('LEASE_PROVIDED'),
  tooManyOps: etcdError('TOO_MANY_TXN_OPS'),
  duplicateKey: etcdError('DUPLICATE_KEY'),
  compacted: etcdError('COMPACTED'),
  future: etcdError('FUTURE_REVISION'),
  tooLargeTtl: etcdError('LEASE_TTL_TOO_LARGE'),
  noSpace: etcdError('NO_SPACE'),
  leaseNotFound: etcdError('LEASE_NOT_FOUND'),
  leaseExists: etcdError('LEASE_EXISTS'),
} satisfies Record<string, CallError>;
