// A request message over the receive limit is refused as etcd refuses it: ResourceExhausted with
// grpc-go's words, "grpc: received message larger than max (X vs. Y)", where Y is
// --max-request-bytes plus gRPC's 512 KiB. Compared with a real etcd of each installed version.
import { connect, constants } from 'node:http2';
import { describeRealEtcd, type EtcdProcess, startEtcd } from '@etcdkit/testkit';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { EmbeddedEtcd } from '../../src/index.js';

/** Status and message of a Put whose message prefix announces `length` octets. */
async function oversizedPut(
  endpoint: string,
  length: number,
): Promise<{ status: string; message: string }> {
  const session = connect(endpoint);
  try {
    const stream = session.request({
      [constants.HTTP2_HEADER_METHOD]: 'POST',
      [constants.HTTP2_HEADER_PATH]: '/etcdserverpb.KV/Put',
      'content-type': 'application/grpc',
      te: 'trailers',
    });
    const prefix = Buffer.alloc(5);
    prefix.writeUInt32BE(length, 1);
    // The prefix and a little of the message: both servers refuse on the announced length.
    stream.end(Buffer.concat([prefix, Buffer.alloc(16)]));
    const fields = await new Promise<Record<string, unknown>>((resolve, reject) => {
      let headers: Record<string, unknown> = {};
      stream.on('response', (received) => {
        headers = { ...received };
      });
      stream.on('trailers', (trailers) => resolve({ ...headers, ...trailers }));
      stream.on('end', () => resolve(headers));
      stream.on('error', reject);
      stream.resume();
    });
    return {
      status: String(fields['grpc-status']),
      message: decodeURIComponent(String(fields['grpc-message'])),
    };
  } finally {
    session.close();
  }
}

describeRealEtcd('a request message over the limit', () => {
  let etcd: EtcdProcess;
  let embedded: EmbeddedEtcd;

  beforeAll(async () => {
    // The same limit on both: 1 MiB + 512 KiB of gRPC allowance.
    etcd = await startEtcd({ args: ['--max-request-bytes', '1048576'] });
    embedded = await EmbeddedEtcd.start({ maxRequestBytes: 1048576 });
  }, 60_000);

  afterAll(async () => {
    await etcd?.stop();
    await embedded?.stop();
  });

  it('is ResourceExhausted in grpc-go words, as etcd says it', async () => {
    const length = 1048576 + 512 * 1024 + 1;
    const [theirs, ours] = await Promise.all([
      oversizedPut(etcd.endpoint, length),
      oversizedPut(embedded.endpoints[0]!, length),
    ]);
    expect(theirs).toEqual({
      status: '8',
      message: `grpc: received message larger than max (${length} vs. ${length - 1})`,
    });
    expect(ours).toEqual(theirs);
  });
});
