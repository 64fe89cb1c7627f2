// etcdserverpb.Lease over gRPC: thin adapters to the lease applier. LeaseKeepAlive is a stream of
// renewals answered one for one, in order; an unknown or expired lease gets TTL 0 and the stream
// stays open. Each reply's header is taken before the renewal, as etcd does, so its revision is
// never one the renewed lease could already have been revoked at.
import { type etcdserverpb, etcdserverpb_Lease } from '@etcdkit/client/protocol';
import { bigintOf } from '../api/requests.js';
import { fillHeader, type ServiceContext } from './context.js';
import { type ServiceRegistry, toStatus } from './registry.js';

export function registerLeaseService(registry: ServiceRegistry, context: ServiceContext): void {
  const { leases } = context;
  const { authorizer } = context;
  registry.unary(etcdserverpb_Lease.LeaseGrant, (request, size, call) => {
    const response = leases.grant(request, size, authorizer.credentialsOf(call));
    return { ...response, header: fillHeader(context, response.header) };
  });
  registry.unary(etcdserverpb_Lease.LeaseRevoke, (request, size, call) => {
    const response = leases.revoke(request, size, authorizer.credentialsOf(call));
    return { ...response, header: fillHeader(context, response.header) };
  });
  registry.unary(etcdserverpb_Lease.LeaseTimeToLive, (request, _size, call) => {
    const response = leases.timeToLive(request, authorizer.credentialsOf(call));
    return { ...response, header: fillHeader(context, response.header) };
  });
  registry.unary(etcdserverpb_Lease.LeaseLeases, (_request, _size, call) => {
    const response = leases.leases(authorizer.credentialsOf(call));
    // A member cut off from the quorum lists the leases its own lessor had, at its revision.
    const applied = context.appliedState?.();
    if (applied !== undefined) {
      return { header: fillHeader(context), leases: applied.leaseIds.map((ID) => ({ ID })) };
    }
    return { ...response, header: fillHeader(context, response.header) };
  });
  registry.bidi(etcdserverpb_Lease.LeaseKeepAlive, (call) => {
    // The stream's token is the one it was opened with; each renewal presents it again.
    const credentials = authorizer.credentialsOf(call);
    let failed = false;
    call.on('data', (request: etcdserverpb.LeaseKeepAliveRequest.$Properties) => {
      if (call.cancelled || failed) return;
      const header = fillHeader(context);
      const id = bigintOf(request.ID);
      let ttl: bigint;
      try {
        ttl = leases.renew(id, credentials);
      } catch (error) {
        // A refused renewal (an expired token, a missing permission) ends the stream, as in etcd.
        failed = true;
        call.emit('error', toStatus(error));
        return;
      }
      call.write({ header, ID: id, TTL: ttl });
    });
    // The client closing its side ends the stream cleanly, as etcd returns on EOF.
    call.on('end', () => call.end());
    // A cancelled or broken call needs no answer; listening keeps the error from being unhandled.
    call.on('error', () => {});
  });
}
