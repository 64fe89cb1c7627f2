// With auth on, etcd writes the requester's user name and auth revision into the header of every
// proposal, so the request size limit (--max-request-bytes) bites that many bytes earlier. The
// embedded server sizes proposals the same way. Both backends.
import { etcdserverpb_KV as KV } from '@etcdkit/client/protocol';
import { expect, it } from 'vitest';
import { b } from '../support/bytes.js';
import { type AuthClient, describeAuth, failure, setUpAuth } from './auth-support.js';

const LIMIT = 4096;
const TOO_LARGE = { code: 3, details: 'etcdserver: request is too large' };

/** The longest value a put of key `k` may carry, found by bisection. */
async function longestValue(client: AuthClient, token?: string): Promise<number> {
  let fits = 0;
  let fails = LIMIT;
  while (fails - fits > 1) {
    const length = Math.floor((fits + fails) / 2);
    const put = client.unary(KV.Put, { key: b('k'), value: new Uint8Array(length) }, token);
    const outcome = await put.then(
      () => 'fits',
      (error: { details: string }) => error.details,
    );
    if (outcome === 'fits') fits = length;
    else if (outcome === TOO_LARGE.details) fails = length;
    else throw new Error(outcome);
  }
  return fits;
}

describeAuth('request size with auth', ({ fresh }) => {
  it("a put's limit drops by the header bytes of the requester: user name and auth revision", async () => {
    const { client } = await fresh({ maxRequestBytes: LIMIT });
    const withoutAuth = await longestValue(client);
    const { root } = await setUpAuth(client);
    const asRoot = await longestValue(client, root);
    // username "root": tag, length, 4 bytes; auth revision (4 after the setup): tag, 1 byte.
    expect(withoutAuth - asRoot).toBe(2 + 4 + 2);
    expect(
      await failure(client.unary(KV.Put, { key: b('k'), value: new Uint8Array(asRoot + 1) }, root)),
    ).toEqual(TOO_LARGE);
  });
});
