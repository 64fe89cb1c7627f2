// v3electionpb.Election over gRPC: Campaign waits until elected (no deadline unless the client
// sets one), Proclaim and Resign act on a LeaderKey, Leader reads the current leader, Observe
// streams leaders and their values. The algorithms are in concurrency/election.ts and observe.ts.
// With auth, every request it makes is checked as the caller's. Errors go out as etcd sends them
// from this service: status Unknown with etcd's message.

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
import { type LocalClient, withoutStatus } from '../concurrency/local-client.js';
import { observe } from '../concurrency/observe.js';
import { EtcdServerError } from '../errors.js';
import { fillHeader, type ServiceContext } from './context.js';
import type { CallInfo, ServiceRegistry } from './registry.js';

/** Registers the Election methods, running on `local`. */
export function registerElectionService(
  registry: ServiceRegistry,
  context: ServiceContext,
  local: LocalClient,
): void {
  const header = (revision: bigint | null | undefined) => fillHeader(context, { revision });
  const caller = (call: CallInfo) => local.as(context.authorizer.credentialsOf(call));
  registry.waitingUnary(v3electionpb_Election.Campaign, async (request, _size, signal, call) => {
    try {
      const elected = await campaign(caller(call), {
        name: bytesOf(request.name),
        lease: bigintOf(request.lease),
        value: bytesOf(request.value),
        signal,
      });
      return { header: fillHeader(context, elected.header), leader: elected.leader };
    } catch (error) {
      throw withoutStatus(error);
    }
  });
  registry.unary(v3electionpb_Election.Proclaim, (request, _size, call) => {
    try {
      const client = caller(call);
      const key = resumed(client, leaderKeyOf(request.leader));
      return { header: fillHeader(context, proclaim(client, key, bytesOf(request.value))) };
    } catch (error) {
      throw withoutStatus(error);
    }
  });
  registry.unary(v3electionpb_Election.Resign, (request, _size, call) => {
    try {
      const client = caller(call);
      const key = resumed(client, leaderKeyOf(request.leader));
      return { header: fillHeader(context, resign(client, key)) };
    } catch (error) {
      throw withoutStatus(error);
    }
  });
  registry.unary(v3electionpb_Election.Leader, (request, _size, call) => {
    try {
      const found = leader(caller(call), bytesOf(request.name));
      return { header: fillHeader(context, found.header), kv: found.kv };
    } catch (error) {
      throw withoutStatus(error);
    }
  });
  registry.serverStream(v3electionpb_Election.Observe, async (request, send, call, signal) => {
    // Linked by hand, and let go of at the end: the halt signal lasts as long as the server.
    const stopped = linkSignals(signal, local.halted);
    try {
      for await (const observation of observe(
        caller(call),
        bytesOf(request.name),
        stopped.signal,
      )) {
        await send({ header: header(observation.revision), kv: observation.kv });
      }
    } catch (error) {
      // A cancelled stream needs no answer; the registry sends none to a cancelled call.
      throw withoutStatus(error);
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
