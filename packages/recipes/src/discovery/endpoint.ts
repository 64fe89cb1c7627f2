// The stored form of an instance, as etcd's Go naming packages store it (`<service>/<key>`,
// {"Op":0,"Addr":"...","Metadata":...}), so Go resolvers and TypeScript services see each other.
import { InvalidArgumentError, type KeyValue } from '@etcdkit/client';
import { recipeName } from '../recipe-name.js';

/** A value JSON can carry. */
export type JsonValue =
  | string
  | number
  | boolean
  | null
  | readonly JsonValue[]
  | { readonly [key: string]: JsonValue };

/** What an instance registers about itself. */
export interface ServiceEndpoint {
  /** The address clients connect to, e.g. `10.0.0.7:8080` (Go's `Endpoint.Addr`). Not empty. */
  readonly addr: string;
  /** Anything a client may use to choose an instance (Go's `Endpoint.Metadata`). Default null. */
  readonly metadata?: JsonValue;
}

/** A live instance of a service, as discovered. */
export interface ServiceInstance {
  /** The full key, `<service>/<id>`. */
  readonly key: string;
  /** The part of the key after `<service>/` (the address, by default). */
  readonly id: string;
  readonly addr: string;
  /** The metadata as stored (null when none). */
  readonly metadata: unknown;
  /** The lease the key is attached to (0n for a key without one). */
  readonly leaseId: bigint;
  /** The revision at which the instance registered (the key's create revision). */
  readonly createRevision: bigint;
  /** The revision of the instance's last change. */
  readonly modRevision: bigint;
}

/** The key prefix of a service's instances, `<service>/`; the service name is checked. */
export function servicePrefix(service: string): string {
  return `${recipeName('ServiceRegistry', 'service', service)}/`;
}

/** The checked id of an instance key: a non-empty string. */
export function instanceId(id: unknown): string {
  if (typeof id !== 'string' || id === '') {
    throw new InvalidArgumentError('an instance key must be a non-empty string');
  }
  return id;
}

/** The stored JSON of `endpoint`, exactly as Go's endpoints.Manager writes it. */
export function encodeEndpoint(endpoint: ServiceEndpoint): string {
  if (typeof endpoint !== 'object' || endpoint === null) {
    throw new InvalidArgumentError('an endpoint must be an object { addr, metadata? }');
  }
  const { addr, metadata = null } = endpoint;
  if (typeof addr !== 'string' || addr === '') {
    throw new InvalidArgumentError('an endpoint needs a non-empty addr');
  }
  let metadataJson: string | undefined;
  try {
    metadataJson = JSON.stringify(metadata);
  } catch (error) {
    throw new InvalidArgumentError('endpoint metadata must be plain JSON', { cause: error });
  }
  if (metadataJson === undefined) {
    throw new InvalidArgumentError('endpoint metadata must be plain JSON');
  }
  // The field order of Go's struct, so both write the same bytes (Go also escapes <, > and &).
  return `{"Op":0,"Addr":${JSON.stringify(addr)},"Metadata":${metadataJson}}`;
}

/**
 * The instance `kv` stores, or undefined when its value is not an endpoint (not JSON, or without
 * an Addr string): Go's resolver skips such keys too. `Op` is not read, as in Go: a key that
 * exists is a live endpoint.
 */
export function decodeInstance(kv: KeyValue, prefix: string): ServiceInstance | undefined {
  let stored: unknown;
  try {
    stored = kv.json();
  } catch {
    return undefined;
  }
  if (typeof stored !== 'object' || stored === null) return undefined;
  const { Addr, Metadata } = stored as { Addr?: unknown; Metadata?: unknown };
  if (typeof Addr !== 'string') return undefined;
  const key = kv.keyText();
  return {
    key,
    id: key.slice(prefix.length),
    addr: Addr,
    metadata: Metadata ?? null,
    leaseId: kv.lease,
    createRevision: kv.createRevision,
    modRevision: kv.modRevision,
  };
}
