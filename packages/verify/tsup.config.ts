import { defineConfig } from 'tsup';

export default defineConfig([
  {
    entry: { index: 'src/index.ts' },
    format: ['esm', 'cjs'],
    dts: { compilerOptions: { composite: false, ignoreDeprecations: '6.0' } },
    clean: true,
    // import.meta.url finds the lock workload's worker script, in the CommonJS build too.
    shims: true,
    target: 'node20',
  },
  {
    // The etcdkit-verify bin: ESM only (top-level await), its shebang kept by tsup; and the lock
    // workload's worker process, which index and cli start from next to themselves.
    entry: { cli: 'src/cli/main.ts', 'lock-worker': 'src/workloads/lock-worker.ts' },
    format: ['esm'],
    target: 'node20',
  },
]);
