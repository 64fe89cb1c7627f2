// A bare Watch stream client for the watch tests: raw requests out, every response in, and plain
// summaries of responses (numbers and text, default fields left out) to compare exactly.
import { etcdserverpb, etcdserverpb_Watch } from '@etcdkit/client/protocol';
import * as grpc from '@grpc/grpc-js';
import { metadataOf } from '../support/grpc-client.js';
import { summary } from '../support/kv.js';

type WatchRequest = etcdserverpb.WatchRequest.$Properties;
type WatchCreateRequest = etcdserverpb.WatchCreateRequest.$Properties;
type WatchResponse = etcdserverpb.WatchResponse;

const Watch = etcdserverpb_Watch.Watch;

export const NOPUT = etcdserverpb.WatchCreateRequest.FilterType.NOPUT;
export const NODELETE = etcdserverpb.WatchCreateRequest.FilterType.NODELETE;

/** One event as numbers and text; prevKv only when present. */
export interface EventSummary {
  readonly type: 'PUT' | 'DELETE';
  readonly kv: ReturnType<typeof summary>;
  readonly prevKv?: ReturnType<typeof summary>;
}

/** A watch response as numbers and text; fields at their default are left out. */
export interface ResponseSummary {
  readonly revision: number;
  readonly watchId: number;
  readonly created?: true;
  readonly canceled?: true;
  readonly compactRevision?: number;
  readonly cancelReason?: string;
  readonly fragment?: true;
  readonly events?: EventSummary[];
}

export function summarize(response: WatchResponse): ResponseSummary {
  const out: {
    -readonly [K in keyof ResponseSummary]: ResponseSummary[K];
  } = {
    revision: Number(response.header?.revision ?? 0n),
    watchId: Number(response.watchId),
  };
  if (response.created) out.created = true;
  if (response.canceled) out.canceled = true;
  if (response.compactRevision) out.compactRevision = Number(response.compactRevision);
  if (response.cancelReason) out.cancelReason = response.cancelReason;
  if (response.fragment) out.fragment = true;
  if (response.events.length > 0) {
    out.events = response.events.map((event) => ({
      type: event.type === 1 ? 'DELETE' : 'PUT',
      kv: summary(event.kv),
      ...(event.prevKv ? { prevKv: summary(event.prevKv) } : {}),
    }));
  }
  return out;
}

/** A PUT event summary. */
export function put(
  key: string,
  value: string,
  create: number,
  mod: number,
  version: number,
  prevKv?: ReturnType<typeof summary>,
): EventSummary {
  const kv = { key, value, create, mod, version, lease: 0n };
  return prevKv === undefined ? { type: 'PUT', kv } : { type: 'PUT', kv, prevKv };
}

/** A DELETE event summary: only key and mod revision are set on a delete's kv. */
export function del(key: string, mod: number, prevKv?: ReturnType<typeof summary>): EventSummary {
  const kv = { key, value: '', create: 0, mod, version: 0, lease: 0n };
  return prevKv === undefined ? { type: 'DELETE', kv } : { type: 'DELETE', kv, prevKv };
}

/** One gRPC connection for watch streams. */
export class WatchConnection {
  private readonly client: grpc.Client;

  constructor(endpoint: string) {
    this.client = new grpc.Client(
      endpoint.replace(/^https?:\/\//, ''),
      grpc.credentials.createInsecure(),
      { 'grpc.max_receive_message_length': -1 },
    );
  }

  /** Opens a Watch stream on this connection, sending `metadata` (e.g. `hasleader`). */
  open(metadata: Readonly<Record<string, string>> = {}): WatchStreamClient {
    const call = this.client.makeBidiStreamRequest(
      Watch.path,
      (message: WatchRequest) => Buffer.from(Watch.request.encode(message).finish()),
      (bytes: Buffer) => Watch.response.decode(bytes),
      metadataOf(metadata),
    );
    return new WatchStreamClient(call);
  }

  /** Closes the connection (every stream on it ends). */
  close(): void {
    this.client.close();
  }
}

/** One Watch stream: requests out, responses collected in arrival order. */
export class WatchStreamClient {
  readonly call: grpc.ClientDuplexStream<WatchRequest, WatchResponse>;
  /** Responses received and not yet taken. */
  private readonly inbox: WatchResponse[] = [];
  private waiter: (() => void) | undefined;
  /** The status the stream ended with, once it ended. */
  error: grpc.ServiceError | undefined;

  constructor(call: grpc.ClientDuplexStream<WatchRequest, WatchResponse>) {
    this.call = call;
    call.on('data', (response: WatchResponse) => {
      this.inbox.push(response);
      this.wake();
    });
    call.on('error', (error: grpc.ServiceError) => {
      this.error = error;
      this.wake();
    });
  }

  create(request: WatchCreateRequest): void {
    this.call.write({ createRequest: request });
  }

  cancel(watchId: number | bigint): void {
    this.call.write({ cancelRequest: { watchId: BigInt(watchId) } });
  }

  progress(): void {
    this.call.write({ progressRequest: {} });
  }

  /** The next `count` responses, waiting up to `timeoutMs` for them. */
  async take(count: number, timeoutMs = 10_000): Promise<WatchResponse[]> {
    const deadline = Date.now() + timeoutMs;
    while (this.inbox.length < count) {
      const left = deadline - Date.now();
      if (left <= 0 || this.error !== undefined) {
        const got = this.inbox.map(summarize);
        throw new Error(
          `expected ${count} watch responses, got ${got.length}: ${JSON.stringify(got)}` +
            (this.error ? ` (stream ended: ${this.error.message})` : ''),
        );
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiter = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    return this.inbox.splice(0, count);
  }

  /** The next response, summarized. */
  async next(timeoutMs?: number): Promise<ResponseSummary> {
    const [response] = await this.take(1, timeoutMs);
    return summarize(response!);
  }

  /** The next `count` responses, summarized. */
  async nextMany(count: number, timeoutMs?: number): Promise<ResponseSummary[]> {
    return (await this.take(count, timeoutMs)).map(summarize);
  }

  /** Whatever arrives within `ms` (summarized): used to show that nothing (more) is sent. */
  async drain(ms = 300): Promise<ResponseSummary[]> {
    await new Promise((resolve) => setTimeout(resolve, ms));
    return this.inbox.splice(0).map(summarize);
  }

  /** Half-closes the stream (no more requests); responses keep coming. */
  end(): void {
    this.call.end();
  }

  /** Cancels the stream from the client side. */
  cancelStream(): void {
    this.call.cancel();
  }

  private wake(): void {
    const waiter = this.waiter;
    this.waiter = undefined;
    waiter?.();
  }
}
