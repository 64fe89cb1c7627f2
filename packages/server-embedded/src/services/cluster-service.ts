// etcdserverpb.Cluster over gRPC: the members of a server alone or of a simulated cluster (see
// consensus/membership.ts). A change is checked as the member called sees its peers (etcd's strict
// reconfiguration check runs on the member asked). Its headers carry no revision: etcd's cluster
// service does not read the store. With auth on, listing members needs a user and changing them the root
// role (checked after the peer URLs are parsed, as etcd's gRPC layer parses them first).
import { type etcdserverpb, etcdserverpb_Cluster } from '@etcdkit/client/protocol';
import { type Member, parsePeerUrls } from '../consensus/membership.js';
import { fillHeaderWithoutRevision, type ServiceContext } from './context.js';
import type { CallInfo, ServiceRegistry } from './registry.js';

export function registerClusterService(registry: ServiceRegistry, context: ServiceContext): void {
  const { membership, authorizer } = context;
  const caller = (call: CallInfo) => authorizer.identify(authorizer.credentialsOf(call));
  const header = () => fillHeaderWithoutRevision(context);
  const members = () => membership.list().map(toWire);

  registry.unary(etcdserverpb_Cluster.MemberList, (_request, _size, call) => {
    // etcd 3.4 does not look at the token for MemberList.
    if (!context.traits.legacyPermissionChecks) caller(call).requireUser();
    // A member cut off from the quorum lists the members it knew (a change since is not applied).
    const known = context.appliedState?.()?.members.map(toWire);
    return { header: header(), members: known ?? members() };
  });

  registry.unary(etcdserverpb_Cluster.MemberAdd, (request, _size, call) => {
    parsePeerUrls(request.peerURLs ?? []);
    caller(call).requireAdmin();
    const added = membership.add(
      request.peerURLs ?? [],
      request.isLearner ?? false,
      context.member.memberId,
    );
    return {
      header: header(),
      member: { ID: added.id, peerURLs: [...added.peerUrls], isLearner: added.isLearner },
      members: members(),
    };
  });

  registry.unary(etcdserverpb_Cluster.MemberRemove, (request, _size, call) => {
    caller(call).requireAdmin();
    membership.remove(request.ID ?? 0n, context.member.memberId);
    return { header: header(), members: members() };
  });

  registry.unary(etcdserverpb_Cluster.MemberUpdate, (request, _size, call) => {
    caller(call).requireAdmin();
    membership.update(request.ID ?? 0n, request.peerURLs ?? []);
    return { header: header(), members: members() };
  });

  registry.unary(etcdserverpb_Cluster.MemberPromote, (request, _size, call) => {
    caller(call).requireAdmin();
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
