// etcdserverpb.KV over gRPC: thin adapters from the wire to the KV applier.
import { etcdserverpb_KV } from '@etcdkit/client/protocol';
import { rangeStreamChunks } from '../kv/range-stream.js';
import type { ResponseHeader } from '../kv/requests.js';
import { fillHeader, fillHeaderWithoutRevision, type ServiceContext } from './context.js';
import type { ServiceRegistry } from './registry.js';

export function registerKvService(registry: ServiceRegistry, context: ServiceContext): void {
  const { kv } = context;
  // The applier's headers carry the revision; the cluster fields are added here, as etcd's gRPC
  // layer does.
  const withHeader = <T extends { header?: ResponseHeader | null }>(response: T): T => ({
    ...response,
    header: fillHeader(context, response.header),
  });
  registry.unary(etcdserverpb_KV.Range, (request) => withHeader(kv.range(request)));
  registry.unary(etcdserverpb_KV.Put, (request, size) => withHeader(kv.put(request, size)));
  registry.unary(etcdserverpb_KV.DeleteRange, (request, size) =>
    withHeader(kv.deleteRange(request, size)),
  );
  registry.unary(etcdserverpb_KV.Txn, (request, size) => withHeader(kv.txn(request, size)));
  registry.unary(etcdserverpb_KV.Compact, (request, size) => withHeader(kv.compact(request, size)));
  registry.serverStream(etcdserverpb_KV.RangeStream, async (request, send, call) => {
    kv.checkRangeStream(request);
    for (const chunk of rangeStreamChunks(context.store, request, context.maxRequestBytes)) {
      if (call.cancelled) return;
      // The pinned revision stays as the chunk has it, even if the store moved on meanwhile.
      const header = chunk.header ? fillHeaderWithoutRevision(context, chunk.header) : undefined;
      await send({ rangeResponse: header ? { ...chunk, header } : chunk });
    }
  });
}
