// Service registration and discovery: each endpoint under `<service>/<id>` on a ResilientSession's
// lease, so a dead instance disappears and one that lost its lease registers again.
import { cmp, type Etcd, type LeaseLostError, op } from '@etcdkit/client';
import { EventEmitter } from 'eventemitter3';
import { RecipeError } from '../errors.js';
import { ResilientSession, type SessionRegistration } from '../session/resilient-session.js';
import type { Session } from '../session/session.js';
import type { StmBackoff } from '../stm/backoff.js';
import { type DiscoverOptions, ServiceDiscovery } from './discovery.js';
import { encodeEndpoint, instanceId, type ServiceEndpoint, servicePrefix } from './endpoint.js';

/** Options of {@link ServiceRegistry}. */
export interface ServiceRegistryOptions {
  /**
   * TTL of the registrations' lease, in whole seconds: how long a crashed instance stays
   * discoverable. Default 10. Ignored with `session`.
   */
  readonly ttl?: number;
  /**
   * Register on this resilient session (sharing its lease with the owner's locks and other keys)
   * instead of one the registry creates on the first {@link ServiceRegistry.register}. The
   * registry then never closes it: its close deletes the registry's keys instead of revoking.
   */
  readonly session?: ResilientSession;
  /** Pauses between re-registration attempts (see ResilientSessionOptions.retry). */
  readonly retry?: StmBackoff;
}

/** Options of {@link ServiceRegistry.register}. */
export interface RegisterOptions {
  /** The part of the key after `<service>/`. Default the endpoint's `addr` (as Go's examples). */
  readonly key?: string;
}

/** The events of a {@link ServiceRegistration}. */
export interface ServiceRegistrationEvents {
  /** The lease the key was attached to is lost: the instance is (or will shortly be) gone. */
  lost: (error: LeaseLostError) => void;
  /**
   * The key was written again under `leaseId` at `revision`: the recovery after a `lost`. (Also
   * emitted for the first write, before `register` resolves.)
   */
  registered: (leaseId: bigint, revision: bigint) => void;
}

const DEFAULT_TTL_SECONDS = 10;

/**
 * Registers service instances and discovers them, with the key layout and JSON of etcd's Go
 * naming packages (`<service>/<id>` holding `{"Op":0,"Addr":...,"Metadata":...}`), so Go's
 * endpoints.Manager and gRPC resolver interoperate with it both ways.
 *
 * @example
 * ```ts
 * const registry = new ServiceRegistry(etcd);
 * await registry.register('services/api', { addr: '10.0.0.7:8080', metadata: { zone: 'a' } });
 * const api = registry.discover('services/api');
 * await api.synced;
 * console.log(api.instances.map((instance) => instance.addr));
 * await registry.close(); // deregisters every instance in one revision
 * ```
 */
export class ServiceRegistry implements AsyncDisposable {
  readonly #options: ServiceRegistryOptions;
  readonly #registrations = new Set<ServiceRegistration>();
  #session: Promise<ResilientSession> | undefined;
  #closing: Promise<void> | undefined;

  /** Nothing is granted until the first {@link register}. */
  constructor(
    /** The client registrations and discoveries go through. */
    readonly etcd: Etcd,
    options: ServiceRegistryOptions = {},
  ) {
    this.#options = options;
    if (options.session) this.#session = Promise.resolve(options.session);
  }

  /**
   * Registers an instance of `service` and keeps it registered until it is closed (or the
   * registry is): after a lease loss it is registered again under the new lease, as soon as etcd
   * can be reached. Resolves once the key is written; a failing first write (bad input, permission
   * denied) rejects and leaves nothing.
   */
  async register(
    service: string,
    endpoint: ServiceEndpoint,
    options: RegisterOptions = {},
  ): Promise<ServiceRegistration> {
    const prefix = servicePrefix(service);
    const value = encodeEndpoint(endpoint);
    const key = `${prefix}${instanceId(options.key ?? endpoint.addr)}`;
    if (this.#closing) throw new ServiceRegistryClosedError();
    const resilient = await this.#resilient();
    const registration = new ServiceRegistration(this, service, key, endpoint, resilient);
    await registration.start(value);
    if (this.#closing) {
      // Closed while the key was being written: undo it rather than leave it behind.
      await registration.close();
      throw new ServiceRegistryClosedError();
    }
    this.#registrations.add(registration);
    return registration;
  }

  /** The live instances of `service` (see {@link ServiceDiscovery}). Needs no lease. */
  discover(service: string, options: DiscoverOptions = {}): ServiceDiscovery {
    return new ServiceDiscovery(this.etcd, service, options);
  }

  /**
   * Deregisters every instance in ONE revision: the registry's own lease is revoked, or, on a
   * given session, the keys still attached to its lease are deleted in one txn.
   */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  /** Closes, for `await using`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  /** @internal */
  forget(registration: ServiceRegistration): void {
    this.#registrations.delete(registration);
  }

  async #close(): Promise<void> {
    const registrations = [...this.#registrations];
    this.#registrations.clear();
    for (const registration of registrations) registration.stop();
    if (!this.#session) return;
    const resilient = await this.#session.catch(() => undefined);
    if (!resilient) return;
    if (!this.#options.session) {
      await resilient.close();
      return;
    }
    const session = resilient.current;
    if (session) await deleteOwnKeys(session, registrations);
  }

  #resilient(): Promise<ResilientSession> {
    this.#session ??= ResilientSession.create(this.etcd, {
      ttl: this.#options.ttl ?? DEFAULT_TTL_SECONDS,
      retry: this.#options.retry,
    });
    // A failed first grant is not kept: the next register tries again.
    const pending = this.#session;
    pending.catch(() => {
      if (this.#session === pending) this.#session = undefined;
    });
    return pending;
  }
}

/**
 * One registered instance. It follows its lease: `lost` when the lease is lost, `registered`
 * when the key is written again under the next one.
 */
export class ServiceRegistration
  extends EventEmitter<ServiceRegistrationEvents>
  implements AsyncDisposable
{
  /** The instance's address. */
  readonly addr: string;
  /** The instance's metadata (null when none). */
  readonly metadata: unknown;
  #registration: SessionRegistration | undefined;
  #written: { session: Session; revision: bigint } | undefined;
  #closing: Promise<void> | undefined;
  readonly #onLost: (error: LeaseLostError, session: Session) => void;
  readonly #registry: ServiceRegistry;
  readonly #resilient: ResilientSession;

  /** @internal */
  constructor(
    registry: ServiceRegistry,
    /** The service name. */
    readonly service: string,
    /** The instance's key, `<service>/<id>`. */
    readonly key: string,
    endpoint: ServiceEndpoint,
    resilient: ResilientSession,
  ) {
    super();
    this.#registry = registry;
    this.#resilient = resilient;
    this.addr = endpoint.addr;
    this.metadata = endpoint.metadata ?? null;
    this.#onLost = (error, session) => {
      if (this.#written?.session !== session) return;
      this.#written = undefined;
      this.emit('lost', error);
    };
  }

  /** True while the key is written under a session that is not known to be lost. */
  get registered(): boolean {
    return this.#written !== undefined && !this.#written.session.isDone;
  }

  /** The lease the key was last written under (undefined while lost). */
  get leaseId(): bigint | undefined {
    return this.#written?.session.leaseId;
  }

  /** The revision of the last write of the key. */
  get revision(): bigint | undefined {
    return this.#written?.revision;
  }

  /**
   * Deregisters this instance: stops re-registering and deletes the key if it is still the one
   * written under this registration's lease (a newer registration of the same key is left alone).
   */
  close(): Promise<void> {
    this.#closing ??= this.#deregister();
    return this.#closing;
  }

  /** Closes, for `await using`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  /** @internal */
  async start(value: string): Promise<void> {
    this.#resilient.on('lost', this.#onLost);
    try {
      this.#registration = await this.#resilient.register(async (session) => {
        const { header } = await session.etcd.put(this.key, value, { lease: session.leaseId });
        this.#written = { session, revision: header.revision };
        this.emit('registered', session.leaseId, header.revision);
      });
    } catch (error) {
      this.#resilient.off('lost', this.#onLost);
      throw error;
    }
  }

  /** @internal Stops following the lease, without deleting anything. */
  stop(): void {
    this.#registration?.remove();
    this.#resilient.off('lost', this.#onLost);
    this.#closing ??= Promise.resolve();
  }

  async #deregister(): Promise<void> {
    const written = this.#written;
    this.#written = undefined;
    this.stop();
    this.#registry.forget(this);
    if (written && !written.session.isDone) await deleteOwnKeys(written.session, [this]);
  }
}

/** Deletes, in one txn, those of `registrations`' keys still attached to `session`'s lease. */
async function deleteOwnKeys(
  session: Session,
  registrations: readonly ServiceRegistration[],
): Promise<void> {
  const keys = registrations.map((registration) => registration.key);
  // A compare per key and a delete per key in ONE txn: one revision. A key that moved to another
  // lease between the read and the txn fails the compares; read again.
  for (;;) {
    if (keys.length === 0) return;
    const read = await session.etcd
      .txn()
      .then(...keys.map((key) => op.get(key)))
      .commit();
    const own = keys.filter((_, i) => {
      const response = read.responses[i];
      return response?.kind === 'range' && response.kvs[0]?.lease === session.leaseId;
    });
    if (own.length === 0) return;
    const deleted = await session.etcd
      .txn()
      .if(...own.map((key) => cmp.lease(key, '==', session.leaseId)))
      .then(...own.map((key) => op.delete(key)))
      .commit();
    if (deleted.succeeded) return;
  }
}

/** {@link ServiceRegistry.register} was called after {@link ServiceRegistry.close}. */
export class ServiceRegistryClosedError extends RecipeError<'SERVICE_REGISTRY_CLOSED'> {
  constructor() {
    super('SERVICE_REGISTRY_CLOSED', 'the service registry is closed');
  }
}
