import { defineConfig } from 'tsup';

export default defineConfig({
  entry: {
    index: 'src/index.ts',
    protocol: 'src/protocol.ts',
    h2: 'src/transport/h2/index.ts',
    internal: 'src/internal/index.ts',
  },
  format: ['esm', 'cjs'],
  dts: { compilerOptions: { composite: false, ignoreDeprecations: '6.0' } },
  clean: true,
  target: 'node20',
  splitting: true,
  // import.meta.url in the CommonJS build too (the grpc-js transport requires grpc-js lazily).
  shims: true,
});
