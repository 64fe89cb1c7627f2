// v3electionpb.Election over gRPC: Campaign waits until elected (no deadline unless the client
// sets one), Proclaim and Resign act on a LeaderKey, Leader reads the current leader, Observe
// streams leaders and their values. The algorithms are in concurrency/election.ts and observe.ts.
// With auth, every request it makes is checked as the caller's; errors go out as etcd sends them
// (recipe-service.ts).

import { linkSignals } from '@etcdkit/client/internal';
import { type v3electionpb, v3electionpb_Election } from '@etcdkit/client/protocol';
import { bigintOf, bytesOf } from '../api/requests.js';
import {
  campaign,
  type LeaderKey,
  leader,
  proclaim,
  resign,
  resumed,
} from '../concurrency/election.js';
import type { LocalClient } from '../concurrency/local-client.js';
import { observe } from '../concurrency/observe.js';
import { EtcdServerError } from '../errors.js';
import { fillHeader, type ServiceContext } from './context.js';
import { queueRequestOf, recipeService } from './recipe-service.js';
import type { ServiceRegistry } from './registry.js';

/** Registers the Election methods, running on `local`. */
export function registerElectionService(
  registry: ServiceRegistry,
  context: ServiceContext,
  local: LocalClient,
): void {
  const service = recipeService(registry, context, local);
  service.waitingUnary(v3electionpb_Election.Campaign, async (request, client, signal) => {
    const value = bytesOf(request.value);
    const elected = await campaign(client, { ...queueRequestOf(request, signal), value });
    return { header: fillHeader(context, elected.header), leader: elected.leader };
  });
  service.unary(v3electionpb_Election.Proclaim, (request, client) => {
    const key = resumed(client, leaderKeyOf(request.leader));
    return { header: fillHeader(context, proclaim(client, key, bytesOf(request.value))) };
  });
  service.unary(v3electionpb_Election.Resign, (request, client) => {
    const key = resumed(client, leaderKeyOf(request.leader));
    return { header: fillHeader(context, resign(client, key)) };
  });
  service.unary(v3electionpb_Election.Leader, (request, client) => {
    const found = leader(client, bytesOf(request.name));
    return { header: fillHeader(context, found.header), kv: found.kv };
  });
  service.serverStream(v3electionpb_Election.Observe, async (request, client, send, signal) => {
    // Linked by hand, and let go of at the end: the halt signal lasts as long as the server.
    // A cancelled stream needs no answer; the registry sends none to a cancelled call.
    const stopped = linkSignals(signal, local.halted);
    try {
      for await (const observation of observe(client, bytesOf(request.name), stopped.signal)) {
        await send({
          header: fillHeader(context, { revision: observation.revision }),
          kv: observation.kv,
        });
      }
    } finally {
      stopped.release();
    }
  });
}

/** The request's LeaderKey; a request without one fails as etcd's does. */
function leaderKeyOf(leader: v3electionpb.LeaderKey.$Properties | null | undefined): LeaderKey {
  if (leader === null || leader === undefined) throw new EtcdServerError('MISSING_LEADER_KEY');
  return {
    name: bytesOf(leader.name),
    key: bytesOf(leader.key),
    rev: bigintOf(leader.rev),
    lease: bigintOf(leader.lease),
  };
}
