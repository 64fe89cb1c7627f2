// @grpc/grpc-js is loaded only when something of grpc-js's is needed (net/grpc-js-module.ts): a
// server on its own HTTP/2 (the default) never loads it. Checked in a fresh process, whose module
// cache holds only what the server itself loaded.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const serverModule = fileURLToPath(new URL('../../src/index.ts', import.meta.url));

function run(script: string): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ['--conditions=etcdkit-source', '--import', 'tsx', '--input-type=module', '-e', script],
      { timeout: 20_000 },
      (error, out, err) => (error ? reject(new Error(`${error.message}\n${err}`)) : resolve(out)),
    );
  });
}

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
    expect(JSON.parse((await run(script)).trim())).toEqual([false, false, true]);
  });
});
