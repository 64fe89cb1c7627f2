// etcdserverpb.KV over gRPC: thin adapters from the wire to the KV applier. A member of a simulated
// cluster cut off from the quorum answers the reads etcd serves without the leader (local-reads.ts)
// from what it had applied (ServiceContext.appliedState): ranges, and a txn's compares as well as
// its ranges, all at the revision it had, never against what the quorum wrote since.
import { etcdserverpb_KV } from '@etcdkit/client/protocol';
import type { ResponseHeader } from '../api/requests.js';
import { rangeStreamChunks } from '../kv/range-stream.js';
import { fillHeader, fillHeaderWithoutRevision, type ServiceContext } from './context.js';
import { isLocalRange, isLocalTxn } from './local-reads.js';
import type { CallInfo, ServiceRegistry } from './registry.js';

export function registerKvService(registry: ServiceRegistry, context: ServiceContext): void {
  const { kv, authorizer } = context;
  // The state a read the member may answer alone is served from: its own when it is cut off.
  const appliedFor = (local: boolean) => (local ? context.appliedState?.() : undefined);
  const kvFor = (local: boolean) => appliedFor(local)?.kv ?? kv;
  // The applier's headers carry the revision; the cluster fields are added here, as etcd's gRPC
  // layer does. Each response is the applier's own fresh object, so it is completed in place.
  const withHeader = <T extends { header?: ResponseHeader | null }>(response: T): T => {
    response.header = fillHeader(context, response.header);
    return response;
  };
  // What each call presents; the applier identifies the caller at the point etcd does. While auth
  // is off nothing is identified or checked, so the metadata is not read at all.
  const credentials = (call: CallInfo) =>
    authorizer.store.enabled ? authorizer.credentialsOf(call) : undefined;
  registry.unary(etcdserverpb_KV.Range, (request, _size, call) =>
    withHeader(kvFor(isLocalRange(request)).range(request, credentials(call))),
  );
  registry.unary(etcdserverpb_KV.Put, (request, size, call) =>
    withHeader(kv.put(request, size, credentials(call))),
  );
  registry.unary(etcdserverpb_KV.DeleteRange, (request, size, call) =>
    withHeader(kv.deleteRange(request, size, credentials(call))),
  );
  registry.unary(etcdserverpb_KV.Txn, (request, size, call) =>
    withHeader(kvFor(isLocalTxn(request)).txn(request, size, credentials(call))),
  );
  registry.unary(etcdserverpb_KV.Compact, (request, size, call) =>
    withHeader(kv.compact(request, size, credentials(call))),
  );
  // Only etcd 3.7 has RangeStream; below, the method is unknown (see registry.unimplemented).
  if (!context.traits.rangeStream) return;
  registry.serverStream(etcdserverpb_KV.RangeStream, async (request, send, call) => {
    const applied = appliedFor(isLocalRange(request));
    (applied?.kv ?? kv).checkRangeStream(request, credentials(call));
    const store = applied?.store ?? context.store;
    for (const chunk of rangeStreamChunks(store, request, context.maxRequestBytes)) {
      if (call.cancelled) return;
      // The pinned revision stays as the chunk has it, even if the store moved on meanwhile.
      const header = chunk.header ? fillHeaderWithoutRevision(context, chunk.header) : undefined;
      await send({ rangeResponse: header ? { ...chunk, header } : chunk });
    }
  });
}
