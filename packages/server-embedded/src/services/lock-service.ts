// v3lockpb.Lock over gRPC: Lock waits in the lock's queue until held (for as long as it takes: the
// call has no deadline unless the client sets one) and answers the key that holds it; Unlock
// deletes a key. The mutex itself is in concurrency/mutex.ts. With auth, every request it makes
// is checked as the caller's. Errors go out as etcd sends them from this service: status Unknown
// with etcd's message.
import { v3lockpb_Lock } from '@etcdkit/client/protocol';
import { bigintOf, bytesOf } from '../api/requests.js';
import { type LocalClient, withoutStatus } from '../concurrency/local-client.js';
import { lock, unlock } from '../concurrency/mutex.js';
import { fillHeader, type ServiceContext } from './context.js';
import type { CallInfo, ServiceRegistry } from './registry.js';

/** Registers Lock and Unlock, running on `local`. */
export function registerLockService(
  registry: ServiceRegistry,
  context: ServiceContext,
  local: LocalClient,
): void {
  const caller = (call: CallInfo) => local.as(context.authorizer.credentialsOf(call));
  registry.waitingUnary(v3lockpb_Lock.Lock, async (request, _size, signal, call) => {
    try {
      const held = await lock(caller(call), {
        name: bytesOf(request.name),
        lease: bigintOf(request.lease),
        signal,
        vanished: context.traits.lockWaiterChecksOwnKey ? 'on-turn' : 'never',
      });
      return { header: fillHeader(context, held.header), key: held.key };
    } catch (error) {
      throw withoutStatus(error);
    }
  });
  registry.unary(v3lockpb_Lock.Unlock, (request, _size, call) => {
    try {
      return { header: fillHeader(context, unlock(caller(call), bytesOf(request.key))) };
    } catch (error) {
      throw withoutStatus(error);
    }
  });
}
