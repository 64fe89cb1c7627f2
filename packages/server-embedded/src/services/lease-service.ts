// etcdserverpb.Lease over gRPC: thin adapters to the lease applier. LeaseKeepAlive is a stream of
// renewals answered one for one, in order; an unknown or expired lease gets TTL 0 and the stream
// stays open. Each reply's header is taken before the renewal, as etcd does, so its revision is
// never one the renewed lease could already have been revoked at.
import { type etcdserverpb, etcdserverpb_Lease } from '@etcdkit/client/protocol';
import { bigintOf } from '../kv/requests.js';
import { fillHeader, type ServiceContext } from './context.js';
import type { ServiceRegistry } from './registry.js';

export function registerLeaseService(registry: ServiceRegistry, context: ServiceContext): void {
  const { leases } = context;
  registry.unary(etcdserverpb_Lease.LeaseGrant, (request, size) => {
    const response = leases.grant(request, size);
    return { ...response, header: fillHeader(context, response.header) };
  });
  registry.unary(etcdserverpb_Lease.LeaseRevoke, (request, size) => {
    const response = leases.revoke(request, size);
    return { ...response, header: fillHeader(context, response.header) };
  });
  registry.unary(etcdserverpb_Lease.LeaseTimeToLive, (request) => {
    const response = leases.timeToLive(request);
    return { ...response, header: fillHeader(context, response.header) };
  });
  registry.unary(etcdserverpb_Lease.LeaseLeases, () => {
    const response = leases.leases();
    return { ...response, header: fillHeader(context, response.header) };
  });
  registry.bidi(etcdserverpb_Lease.LeaseKeepAlive, (call) => {
    call.on('data', (request: etcdserverpb.LeaseKeepAliveRequest.$Properties) => {
      if (call.cancelled) return;
      const header = fillHeader(context);
      const id = bigintOf(request.ID);
      call.write({ header, ID: id, TTL: leases.renew(id) });
    });
    // The client closing its side ends the stream cleanly, as etcd returns on EOF.
    call.on('end', () => call.end());
    // A cancelled or broken call needs no answer; listening keeps the error from being unhandled.
    call.on('error', () => {});
  });
}
