// etcdserverpb.Cluster over gRPC: one member, which is its own leader. Membership changes answer
// Unimplemented for now.
import { etcdserverpb_Cluster } from '@etcdkit/client/protocol';
import { fillHeaderWithoutRevision, type ServiceContext } from './context.js';
import type { ServiceRegistry } from './registry.js';

export function registerClusterService(registry: ServiceRegistry, context: ServiceContext): void {
  registry.unary(etcdserverpb_Cluster.MemberList, () => ({
    // etcd's cluster service does not read the store: its headers carry revision 0.
    header: fillHeaderWithoutRevision(context),
    members: [
      {
        ID: context.member.memberId,
        name: context.member.name,
        peerURLs: [...context.member.peerUrls],
        clientURLs: [...context.member.clientUrls],
        isLearner: false,
      },
    ],
  }));
}
