// @grpc/grpc-js is loaded only when a grpc-js channel opens (grpc-js-module.ts): a client on the
// default transport never pays for importing it. Checked in a fresh process, whose module cache
// holds only what the client itself loaded.
import { fileURLToPath } from 'node:url';
import { runModuleScript } from '@etcdkit/testkit';
import { describe, expect, it } from 'vitest';

const client = fileURLToPath(new URL('../../src/index.ts', import.meta.url));

describe('the grpc-js transport', () => {
  it('loads @grpc/grpc-js when its first channel opens, not when the client is imported', async () => {
    const script = `
      import { createRequire } from 'node:module';
      const loaded = () => Object.keys(createRequire(import.meta.url).cache)
        .some((path) => path.includes('@grpc/grpc-js'));
      const { Etcd, GrpcJsTransport } = await import(${JSON.stringify(client)});
      const seen = [loaded()];
      const plain = new Etcd({ endpoints: ['http://127.0.0.1:1'], dialTimeoutMs: 50 });
      await plain.get('k', { timeoutMs: 100 }).catch((error) => error.code);
      await plain.close();
      seen.push(loaded());
      new GrpcJsTransport().open({ target: '127.0.0.1:1' }).close();
      seen.push(loaded());
      console.log(JSON.stringify(seen));
    `;
    expect(JSON.parse((await runModuleScript(script)).trim())).toEqual([false, false, true]);
  });
});
