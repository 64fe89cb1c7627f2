// grpc.health.v1.Health: the server is SERVING as a whole (service ""), which is the only service
// name etcd registers; any other name is unknown.
import { grpc_health_v1_Health } from '@etcdkit/client/protocol';
import { EtcdServerError } from '../errors.js';
import type { ServiceRegistry } from './registry.js';

const SERVING = 1;

export function registerHealthService(registry: ServiceRegistry): void {
  registry.unary(grpc_health_v1_Health.Check, (request) => {
    if (request.service) throw new EtcdServerError('UNKNOWN_SERVICE');
    return { status: SERVING };
  });
}
