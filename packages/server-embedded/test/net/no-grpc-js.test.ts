// The embedded server never loads @grpc/grpc-js: it serves gRPC on its own HTTP/2 (net/h2), a
// single server and a simulated cluster's members alike. Checked in a fresh process, whose module
// cache holds only what the server itself loaded.
import { fileURLToPath } from 'node:url';
import { runModuleScript } from '@etcdkit/testkit';
import { describe, expect, it } from 'vitest';

const serverModule = fileURLToPath(new URL('../../src/index.ts', import.meta.url));

describe('the embedded server and grpc-js', () => {
  it('loads @grpc/grpc-js neither on import nor serving, alone or as a simulated cluster', async () => {
    const script = `
      import { createRequire } from 'node:module';
      const loaded = () => Object.keys(createRequire(import.meta.url).cache)
        .some((path) => path.includes('@grpc/grpc-js'));
      const { EmbeddedCluster, EmbeddedEtcd } = await import(${JSON.stringify(serverModule)});
      const seen = [loaded()];
      const server = await EmbeddedEtcd.start();
      await server.stop();
      seen.push(loaded());
      const cluster = await EmbeddedCluster.start({ members: 3 });
      cluster.members[2].partition();
      await cluster.stop();
      seen.push(loaded());
      console.log(JSON.stringify(seen));
    `;
    expect(JSON.parse((await runModuleScript(script, { sources: true })).trim())).toEqual([
      false,
      false,
      false,
    ]);
  });
});
