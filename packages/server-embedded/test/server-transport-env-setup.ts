// Test setup (vitest `setupFiles`): ETCDKIT_TEST_SERVER_TRANSPORT=grpc-js makes every EmbeddedEtcd
// started without a `transport` option serve on grpc-js's server, so any suite runs on it unchanged.
// Unset (or `h2`, the default), nothing changes. Servers started as child processes keep theirs.
import { vi } from 'vitest';
import type * as Engine from '../src/net/grpc-engine.js';

const chosen = process.env.ETCDKIT_TEST_SERVER_TRANSPORT;
if (chosen !== undefined && chosen !== '' && chosen !== 'h2') {
  if (chosen !== 'grpc-js') {
    throw new Error(`ETCDKIT_TEST_SERVER_TRANSPORT must be grpc-js or h2, got ${chosen}`);
  }
  vi.doMock(import('../src/net/grpc-engine.js'), async (importOriginal) => ({
    ...(await importOriginal<typeof Engine>()),
    DEFAULT_SERVER_TRANSPORT: chosen as Engine.ServerTransport,
  }));
}
