// Test setup (vitest `setupFiles`): ETCDKIT_TEST_TRANSPORT=grpc-js (or http2) makes every client
// created without a `transport` option use that transport, so any client or recipes suite runs
// over it unchanged. Unset (or `h2`, the default), nothing changes.
import { vi } from 'vitest';
import type * as Select from '../src/transport/select.js';

const chosen = process.env.ETCDKIT_TEST_TRANSPORT;
if (chosen !== undefined && chosen !== '' && chosen !== 'h2') {
  if (chosen !== 'grpc-js' && chosen !== 'http2') {
    throw new Error(`ETCDKIT_TEST_TRANSPORT must be grpc-js, h2 or http2, got ${chosen}`);
  }
  vi.doMock(import('../src/transport/select.js'), async (importOriginal) => {
    const actual = await importOriginal<typeof Select>();
    return {
      ...actual,
      selectTransport: (choice: Parameters<typeof Select.selectTransport>[0]) =>
        actual.selectTransport(choice ?? chosen),
    };
  });
}
