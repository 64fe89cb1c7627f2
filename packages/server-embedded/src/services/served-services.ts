// The gRPC services an embedded etcd member serves: etcd's v3 API, its Lock and Election services,
// and gRPC health. Methods of these that have no handler answer Unimplemented.
import {
  etcdserverpb_Auth,
  etcdserverpb_Cluster,
  etcdserverpb_KV,
  etcdserverpb_Lease,
  etcdserverpb_Maintenance,
  etcdserverpb_Watch,
  grpc_health_v1_Health,
  type MethodDescriptor,
  v3electionpb_Election,
  v3lockpb_Lock,
} from '@etcdkit/client/protocol';

/** Every service served, as tables of method descriptors. */
export const SERVED_SERVICES: readonly Readonly<
  Record<string, MethodDescriptor<unknown, unknown>>
>[] = [
  etcdserverpb_KV,
  etcdserverpb_Watch,
  etcdserverpb_Lease,
  etcdserverpb_Cluster,
  etcdserverpb_Maintenance,
  etcdserverpb_Auth,
  v3lockpb_Lock,
  v3electionpb_Election,
  grpc_health_v1_Health,
] as readonly Readonly<Record<string, MethodDescriptor<unknown, unknown>>>[];
