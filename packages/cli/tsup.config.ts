import { defineConfig } from 'tsup';

export default defineConfig([
  {
    entry: { index: 'src/index.ts' },
    format: ['esm', 'cjs'],
    dts: { compilerOptions: { composite: false, ignoreDeprecations: '6.0' } },
    clean: true,
    // import.meta.url finds the watchdog script next to the bundle, in the CommonJS build too.
    shims: true,
    target: 'node20',
  },
  {
    // The etcdkit bin (ESM only: top-level await, its shebang kept by tsup) and the watchdog
    // process that the supervisor starts from next to itself.
    entry: { cli: 'src/cli/main.ts', watchdog: 'src/watchdog/main.ts' },
    format: ['esm'],
    target: 'node20',
  },
]);
