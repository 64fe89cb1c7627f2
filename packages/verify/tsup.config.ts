import { defineConfig } from 'tsup';

export default defineConfig([
  {
    entry: { index: 'src/index.ts' },
    format: ['esm', 'cjs'],
    dts: { compilerOptions: { composite: false, ignoreDeprecations: '6.0' } },
    sourcemap: true,
    clean: true,
    target: 'node20',
  },
  {
    // The etcdkit-verify bin: ESM only (top-level await), its shebang kept by tsup.
    entry: { cli: 'src/cli/main.ts' },
    format: ['esm'],
    sourcemap: true,
    target: 'node20',
  },
]);
