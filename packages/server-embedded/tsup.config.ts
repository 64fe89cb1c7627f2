import { defineConfig } from 'tsup';

export default defineConfig([
  {
    entry: { index: 'src/index.ts' },
    format: ['esm', 'cjs'],
    dts: { compilerOptions: { composite: false, ignoreDeprecations: '6.0' } },
    clean: true,
    target: 'node20',
    // import.meta.url in the CommonJS build too (grpc-js is required lazily).
    shims: true,
  },
  {
    // The etcdkit-server bin: ESM only (top-level await), its shebang kept by tsup.
    entry: { cli: 'src/cli/main.ts' },
    format: ['esm'],
    target: 'node20',
  },
]);
