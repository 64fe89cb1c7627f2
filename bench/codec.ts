// Decoding a Range response of 100 keys: etcdkit's generated codec (64-bit fields straight to
// bigint) against the approach of runtime-loaded .proto files with 64-bit fields as strings, which
// is how the `etcd3` npm package (through @grpc/proto-loader) decodes the same bytes. Then the watch
// stream's messages (issue 28: a recipe's watch event, a waiter's watch create and cancel): a
// one-event WatchResponse decoded and a create WatchRequest framed, by the generated code and by the
// client's hand-written codec (response-decoders.ts, request-frames.ts), in the same run.
import { fileURLToPath } from 'node:url';
import Long from 'long';
import protobuf from 'protobufjs';
import { Bench } from 'tinybench';
import { etcdserverpb_Watch } from '../packages/client/src/generated/methods.js';
import { etcdserverpb } from '../packages/client/src/protocol.js';
import { encodeMessage } from '../packages/client/src/transport/h2/grpc-message.js';
import { encodeRequestFrame } from '../packages/client/src/transport/request-frames.js';
import { decodeResponse } from '../packages/client/src/transport/response-decoders.js';

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

/** A watch response with one put event, as a waiter's watch receives it. */
function watchEventResponse(): Buffer {
  const header = { clusterId: 14841639068965178418n, memberId: 10276657743932975437n };
  return Buffer.from(
    etcdserverpb.WatchResponse.encode({
      header: { ...header, revision: 6001n, raftTerm: 4n },
      watchId: 3n,
      events: [
        {
          kv: {
            key: Buffer.from('locks/queue/694d8a8b2c1f0e03'),
            value: Buffer.from('holder-17'),
            createRevision: 6001n,
            modRevision: 6001n,
            version: 1n,
            lease: 7587884537446526720n,
          },
        },
      ],
    }).finish(),
  );
}

const watchCreate: etcdserverpb.WatchRequest.$Properties = {
  createRequest: {
    key: Buffer.from('locks/queue/694d8a8b2c1f0e02'),
    startRevision: 6000n,
    filters: [1],
    prevKv: true,
  },
};

export const codecSuite = {
  name: 'codec',
  description:
    'decode a 100-key RangeResponse; a one-event WatchResponse decoded and a create WatchRequest framed, generated code vs the hand-written codec',
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
    const watchBytes = watchEventResponse();
    bench
      .add('WatchResponse, 1 event: generated decoder', () => {
        const response = etcdserverpb.WatchResponse.decode(watchBytes);
        if (response.events.length !== 1) throw new Error('bad decode');
      })
      .add('WatchResponse, 1 event: hand decoder', () => {
        const response = decodeResponse(etcdserverpb_Watch.Watch, watchBytes);
        if (response.events.length !== 1) throw new Error('bad decode');
      })
      .add('WatchRequest create, framed: generated encoder', () => {
        encodeMessage(etcdserverpb.WatchRequest.encode(watchCreate).finish());
      })
      .add('WatchRequest create, framed: hand encoder', () => {
        encodeRequestFrame(etcdserverpb_Watch.Watch, watchCreate);
      });
    await bench.run();
    return bench;
  },
};
