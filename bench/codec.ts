// Decoding a Range response of 100 keys: etcdkit's generated codec (64-bit fields straight to
// bigint) against the approach of runtime-loaded .proto files with 64-bit fields as strings, which
// is how the `etcd3` npm package (through @grpc/proto-loader) decodes the same bytes.
import { fileURLToPath } from 'node:url';
import Long from 'long';
import protobuf from 'protobufjs';
import { Bench } from 'tinybench';
import { etcdserverpb } from '../packages/client/src/protocol.js';

const protoRoot = fileURLToPath(new URL('../packages/client/proto/', import.meta.url));

function sampleResponse(): Uint8Array {
  const kvs = Array.from({ length: 100 }, (_, i) => ({
    key: Buffer.from(`config/service-${i.toString().padStart(4, '0')}`),
    value: Buffer.from(JSON.stringify({ replicas: i, image: `registry/app:${i}` })),
    createRevision: BigInt(1000 + i),
    modRevision: BigInt(5000 + i),
    version: BigInt(1 + (i % 7)),
    lease: i % 3 === 0 ? 7587884537446526720n + BigInt(i) : 0n,
  }));
  return etcdserverpb.RangeResponse.encode({
    header: {
      clusterId: 14841639068965178418n,
      memberId: 10276657743932975437n,
      revision: 6000n,
      raftTerm: 4n,
    },
    kvs,
    count: 100n,
  }).finish();
}

export const codecSuite = {
  name: 'codec',
  description: 'decode a 100-key RangeResponse',
  async run(): Promise<Bench> {
    const bytes = sampleResponse();
    protobuf.util.Long = Long;
    protobuf.configure();
    const root = new protobuf.Root();
    root.resolvePath = (_origin, target) => protoRoot + target;
    root.loadSync('etcdserverpb/rpc.proto', { keepCase: true });
    const reflected = root.lookupType('etcdserverpb.RangeResponse');
    const options = { longs: String, enums: String, bytes: Buffer, defaults: true, oneofs: true };

    const bench = new Bench({ time: 1000, warmupTime: 200 });
    bench
      .add('etcdkit static codec (bigint)', () => {
        const response = etcdserverpb.RangeResponse.decode(bytes);
        if (response.kvs.length !== 100) throw new Error('bad decode');
      })
      .add('runtime .proto + toObject (longs as strings, like etcd3)', () => {
        const response = reflected.toObject(reflected.decode(bytes), options);
        if ((response.kvs as unknown[]).length !== 100) throw new Error('bad decode');
      });
    await bench.run();
    return bench;
  },
};
