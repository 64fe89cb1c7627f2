// etcdserverpb.Cluster over gRPC: one started member, which is its own leader, and the learner it
// may be given (see server/membership.ts). Its headers carry no revision: etcd's cluster service
// does not read the store.
import { type etcdserverpb, etcdserverpb_Cluster } from '@etcdkit/client/protocol';
import type { Member } from '../server/membership.js';
import { fillHeaderWithoutRevision, type ServiceContext } from './context.js';
import type { ServiceRegistry } from './registry.js';

export function registerClusterService(registry: ServiceRegistry, context: ServiceContext): void {
  const { membership } = context;
  const header = () => fillHeaderWithoutRevision(context);
  const members = () => membership.list().map(toWire);

  registry.unary(etcdserverpb_Cluster.MemberList, () => ({ header: header(), members: members() }));

  registry.unary(etcdserverpb_Cluster.MemberAdd, (request) => {
    const added = membership.add(request.peerURLs ?? [], request.isLearner ?? false);
    return {
      header: header(),
      member: { ID: added.id, peerURLs: [...added.peerUrls], isLearner: added.isLearner },
      members: members(),
    };
  });

  registry.unary(etcdserverpb_Cluster.MemberRemove, (request) => {
    membership.remove(request.ID ?? 0n);
    return { header: header(), members: members() };
  });

  registry.unary(etcdserverpb_Cluster.MemberUpdate, (request) => {
    membership.update(request.ID ?? 0n, request.peerURLs ?? []);
    return { header: header(), members: members() };
  });

  registry.unary(etcdserverpb_Cluster.MemberPromote, (request) => {
    membership.promote(request.ID ?? 0n);
    return { header: header(), members: members() };
  });
}

function toWire(member: Member): etcdserverpb.Member.$Properties {
  return {
    ID: member.id,
    name: member.name,
    peerURLs: [...member.peerUrls],
    clientURLs: [...member.clientUrls],
    isLearner: member.isLearner,
  };
}
