// Watch lag, read from the watch stream itself: each WatchResponse carries the store's revision when
// it was sent (its header) and the revision of each event. A live watcher gets its events at once
// (lag 0); one replaying history, or one etcd keeps unsynced because it is slow, gets them late.
import type { BidiStream, Connection } from '@etcdkit/client';
import { endpointAttributes } from './call-attributes.js';
import type { Instruments } from './instruments.js';

const WATCH_PATH = '/etcdserverpb.Watch/Watch';

interface WatchResponseShape {
  readonly header?: { readonly revision?: unknown } | null;
  readonly events?: readonly { readonly kv?: { readonly modRevision?: unknown } | null }[] | null;
}

/** Replaces `connection.bidiStream` by one that measures the lag of the watch streams it opens. */
export function measureWatchLag(connection: Connection, instruments: Instruments): void {
  const original = connection.bidiStream.bind(connection) as Connection['bidiStream'];
  const bidiStream: Connection['bidiStream'] = (method, options) => {
    const opened = original(method, options);
    return method.path === WATCH_PATH
      ? opened.then((stream) => observed(stream, instruments))
      : opened;
  };
  Object.defineProperty(connection, 'bidiStream', {
    value: bidiStream,
    configurable: true,
    writable: true,
  });
}

function observed<Req, Res>(stream: BidiStream<Req, Res>, instruments: Instruments) {
  const attributes = endpointAttributes(stream.endpoint);
  const record = (response: WatchResponseShape) => {
    const head = response.header?.revision;
    if (typeof head !== 'bigint') return;
    for (const event of response.events ?? []) {
      const revision = event.kv?.modRevision;
      if (typeof revision === 'bigint') {
        instruments.watchLag.record(Number(head - revision), attributes);
      }
    }
  };
  const wrapped: BidiStream<Req, Res> = {
    endpoint: stream.endpoint,
    write: (request) => stream.write(request),
    end: () => stream.end(),
    cancel: () => stream.cancel(),
    [Symbol.asyncIterator]() {
      const inner = stream[Symbol.asyncIterator]();
      return {
        async next() {
          const result = await inner.next();
          if (!result.done) record(result.value as WatchResponseShape);
          return result;
        },
        return: async (value?: unknown) =>
          inner.return ? inner.return(value) : { done: true, value: undefined },
      };
    },
  };
  return wrapped;
}
