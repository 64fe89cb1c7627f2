import { defineConfig } from 'tsup';

export default defineConfig({
  entry: { index: 'src/index.ts', internal: 'src/internal.ts' },
  splitting: true,
  format: ['esm', 'cjs'],
  dts: { compilerOptions: { composite: false, ignoreDeprecations: '6.0' } },
  clean: true,
  target: 'node20',
});
