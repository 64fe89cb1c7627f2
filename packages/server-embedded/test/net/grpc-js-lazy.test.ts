// @grpc/grpc-js is loaded only when something of grpc-js's is needed (grpc-js-module.ts): a
// server on its own HTTP/2 (the default) never loads it. Checked in a fresh process, whose module
// cache holds only what the server itself loaded.
import { fileURLToPath } from 'node:url';
import { runModuleScript } from '@etcdkit/testkit';
import { describe, expect, it } from 'vitest';

const serverModule = fileURLToPath(new URL('../../src/index.ts', import.meta.url));

describe('the embedded server and grpc-js', () => {
  it('loads @grpc/grpc-js for the grpc-js transport only, not on import or on its own HTTP/2', async () => {
    const script = `
      import { createRequire } from 'node:module';
      const loaded = () => Object.keys(createRequire(import.meta.url).cache)
        .some((path) => path.includes('@grpc/grpc-js'));
      const { EmbeddedEtcd } = await import(${JSON.stringify(serverModule)});
      const seen = [loaded()];
      const own = await EmbeddedEtcd.start({ transport: 'h2' });
      await own.stop();
      seen.push(loaded());
      const viaGrpcJs = await EmbeddedEtcd.start({ transport: 'grpc-js' });
      await viaGrpcJs.stop();
      seen.push(loaded());
      console.log(JSON.stringify(seen));
    `;
    expect(JSON.parse((await runModuleScript(script, { sources: true })).trim())).toEqual([
      false,
      false,
      true,
    ]);
  });
});
