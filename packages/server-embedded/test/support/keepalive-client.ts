// A LeaseKeepAlive stream for tests: send ids, read the replies one by one.
import { type etcdserverpb, etcdserverpb_Lease as Lease } from '@etcdkit/client/protocol';
import * as grpc from '@grpc/grpc-js';

type KeepAliveResponse = etcdserverpb.LeaseKeepAliveResponse;

export interface KeepAliveStream {
  /** Asks to renew a lease. */
  send(id: bigint): void;
  /** The next reply (rejects if the stream fails or ends first). */
  next(): Promise<KeepAliveResponse>;
  /** Resolves with the stream's status once the server ends it. */
  readonly ended: Promise<grpc.StatusObject>;
  /** Half-closes the stream from the client side. */
  end(): void;
  close(): void;
}

export function openKeepAlive(endpoint: string): KeepAliveStream {
  const client = new grpc.Client(
    endpoint.replace(/^https?:\/\//, ''),
    grpc.credentials.createInsecure(),
  );
  const method = Lease.LeaseKeepAlive;
  const call = client.makeBidiStreamRequest(
    method.path,
    (message: etcdserverpb.LeaseKeepAliveRequest.$Properties) =>
      Buffer.from(method.request.encode(message).finish()),
    (bytes: Buffer) => method.response.decode(bytes),
  );
  const replies: KeepAliveResponse[] = [];
  const waiting: { resolve: (r: KeepAliveResponse) => void; reject: (e: unknown) => void }[] = [];
  let failure: unknown;
  call.on('data', (reply: KeepAliveResponse) => {
    const waiter = waiting.shift();
    if (waiter) waiter.resolve(reply);
    else replies.push(reply);
  });
  const fail = (error: unknown) => {
    failure = error;
    for (const waiter of waiting.splice(0)) waiter.reject(error);
  };
  call.on('error', fail);
  const ended = new Promise<grpc.StatusObject>((resolve) => call.on('status', resolve));
  call.on('end', () => fail(new Error('stream ended')));
  return {
    send: (id) => call.write({ ID: id }),
    next: () => {
      const reply = replies.shift();
      if (reply) return Promise.resolve(reply);
      if (failure !== undefined) return Promise.reject(failure);
      return new Promise((resolve, reject) => waiting.push({ resolve, reject }));
    },
    ended,
    end: () => call.end(),
    close: () => {
      call.cancel();
      client.close();
    },
  };
}
