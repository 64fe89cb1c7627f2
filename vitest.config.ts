import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));

export default defineConfig({
  resolve: {
    alias: [
      { find: /^@etcdkit\/client$/, replacement: here('./packages/client/src/index.ts') },
      {
        find: /^@etcdkit\/client\/protocol$/,
        replacement: here('./packages/client/src/protocol.ts'),
      },
      {
        find: /^@etcdkit\/client\/h2$/,
        replacement: here('./packages/client/src/transport/h2/index.ts'),
      },
      {
        find: /^@etcdkit\/client\/internal$/,
        replacement: here('./packages/client/src/internal/index.ts'),
      },
      { find: /^@etcdkit\/otel$/, replacement: here('./packages/otel/src/index.ts') },
      { find: /^@etcdkit\/recipes$/, replacement: here('./packages/recipes/src/index.ts') },
      {
        find: /^@etcdkit\/recipes\/internal$/,
        replacement: here('./packages/recipes/src/internal.ts'),
      },
      {
        find: /^@etcdkit\/server-embedded$/,
        replacement: here('./packages/server-embedded/src/index.ts'),
      },
      { find: /^@etcdkit\/testkit$/, replacement: here('./testkit/src/index.ts') },
      {
        find: /^@etcdkit\/testkit\/describe-layers$/,
        replacement: here('./testkit/src/describe-layers.ts'),
      },
      { find: /^@etcdkit\/testkit\/layers$/, replacement: here('./testkit/src/layers.ts') },
      { find: /^@etcdkit\/verify$/, replacement: here('./packages/verify/src/index.ts') },
    ],
  },
  test: {
    include: [
      'packages/*/test/**/*.test.ts',
      'testkit/test/**/*.test.ts',
      'examples/test/**/*.test.ts',
      'docs/samples/**/*.test.ts',
    ],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    globalSetup: [here('./testkit/src/global-setup.ts')],
    // ETCDKIT_TEST_TRANSPORT=http2 (or grpc-js) runs the suites over that client transport.
    setupFiles: [here('./packages/client/test/transport-env-setup.ts')],
    reporters: ['default'],
  },
});
