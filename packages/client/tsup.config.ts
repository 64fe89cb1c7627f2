import { defineConfig } from 'tsup';

export default defineConfig({
  entry: { index: 'src/index.ts', protocol: 'src/protocol.ts' },
  format: ['esm', 'cjs'],
  dts: { compilerOptions: { composite: false, ignoreDeprecations: '6.0' } },
  sourcemap: true,
  clean: true,
  target: 'node20',
  splitting: true,
  // p-retry is ESM-only; bundling it keeps the CommonJS build loadable with require().
  noExternal: ['p-retry', 'is-network-error'],
});
