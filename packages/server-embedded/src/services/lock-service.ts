// v3lockpb.Lock over gRPC: Lock waits in the lock's queue until held (for as long as it takes: the
// call has no deadline unless the client sets one) and answers the key that holds it; Unlock
// deletes a key. The mutex itself is in concurrency/mutex.ts. With auth, every request it makes
// is checked as the caller's; errors go out as etcd sends them (recipe-service.ts).
import { v3lockpb_Lock } from '@etcdkit/client/protocol';
import { bytesOf } from '../api/requests.js';
import type { LocalClient } from '../concurrency/local-client.js';
import { lock, unlock } from '../concurrency/mutex.js';
import { fillHeader, type ServiceContext } from './context.js';
import { queueRequestOf, recipeService } from './recipe-service.js';
import type { ServiceRegistry } from './registry.js';

/** Registers Lock and Unlock, running on `local`. */
export function registerLockService(
  registry: ServiceRegistry,
  context: ServiceContext,
  local: LocalClient,
): void {
  const service = recipeService(registry, context, local);
  service.waitingUnary(v3lockpb_Lock.Lock, async (request, client, signal) => {
    const checksOwnKeyOnTurn = context.traits.lockWaiterChecksOwnKey;
    const held = await lock(client, { ...queueRequestOf(request, signal), checksOwnKeyOnTurn });
    return { header: fillHeader(context, held.header), key: held.key };
  });
  service.unary(v3lockpb_Lock.Unlock, (request, client) => ({
    header: fillHeader(context, unlock(client, bytesOf(request.key))),
  }));
}
