// Group membership (Curator's GroupMember): each member is one key `<group>/<id>` holding its
// value on its session's lease; the live view is one informer (one watch) over the group.
import {
  cmp,
  type DeleteOp,
  type EtcdError,
  Informer,
  type KeyValue,
  type KV,
  op,
  type PutOp,
  type ResponseHeader,
} from '@etcdkit/client';
import { EventEmitter } from 'eventemitter3';
import { LockLostError, RecipeError } from '../errors.js';
import { recipeName } from '../recipe-name.js';
import type { Session } from '../session/session.js';
import type { WaitOptions } from '../wait.js';

/** One member of a group. */
export interface GroupMemberInfo {
  /** The member's id: its key after `<group>/`. */
  readonly id: string;
  /** The value it joined with or last set. */
  readonly value: string;
  /** The create revision of its key (when it joined). */
  readonly joinedAt: bigint;
}

/** The members of a group at one revision. */
export interface GroupMembers {
  /** The members by id, in id order. */
  readonly members: ReadonlyMap<string, GroupMemberInfo>;
  /** The revision the view is current as of. */
  readonly revision: bigint;
}

/** Another session is a member under this id: nothing was written. */
export class GroupMemberExistsError extends RecipeError<'GROUP_MEMBER_EXISTS'> {
  /** The member's key. */
  readonly key: string;

  /** `key` belongs to another session's member. */
  constructor(key: string) {
    super('GROUP_MEMBER_EXISTS', `${key} is already a member on another session's lease`);
    this.key = key;
  }
}

/**
 * A group of processes, named by a key prefix: Apache Curator's `GroupMember` on etcd. A member is
 * the key `<group>/<id>` holding its value, attached to its session's lease, so it leaves the
 * group when it leaves, when its session is closed, or when its lease expires. {@link watch} gives
 * a live view of every member over ONE watch. Go's etcd client has no group recipe.
 *
 * @example
 * ```ts
 * const group = new Group(etcd, 'groups/workers');
 * const me = await group.join(session, 'worker-1', JSON.stringify({ slots: 4 }));
 * for await (const { members } of group.watch()) console.log([...members.keys()]);
 * ```
 */
export class Group {
  /** The group's key prefix: the name followed by `/`. */
  readonly prefix: string;

  constructor(
    /** The client (or namespaced KV) the group is read and watched through. */
    readonly kv: KV,
    /** The group's name (a non-empty key prefix, without the trailing `/`). */
    readonly name: string,
  ) {
    this.prefix = `${recipeName('Group', 'name', name)}/`;
  }

  /**
   * Joins as `id` with `value` on `session`'s lease, in one txn that creates the key only if it is
   * missing. The same session joining again under its id sets the value; another session's member
   * under `id` fails it with {@link GroupMemberExistsError}.
   */
  async join(
    session: Session,
    id: string,
    value = '',
    options: WaitOptions = {},
  ): Promise<GroupMembership> {
    const key = `${this.prefix}${recipeName('Group', 'id', id)}`;
    const lease = session.leaseId;
    const result = await session.etcd
      .txn()
      .if(cmp.missing(key))
      .then(op.put(key, value, { lease }))
      .else(op.get(key))
      .commit({ signal: options.signal });
    if (result.succeeded) {
      return new GroupMembership(session, id, key, result.header.revision, value, result.header);
    }
    const existing = result.responses[0].kvs[0];
    if (existing === undefined || existing.lease !== lease) throw new GroupMemberExistsError(key);
    const member = new GroupMembership(
      session,
      id,
      key,
      existing.createRevision,
      value,
      result.header,
    );
    await member.set(value, options);
    return member;
  }

  /** The members now, in one read. */
  async members(options: WaitOptions = {}): Promise<GroupMembers> {
    const read = await this.kv.range({ prefix: this.prefix, signal: options.signal });
    return viewOf(this.prefix, read.kvs, read.header.revision);
  }

  /** A live view of the members over one watch; see {@link GroupView}. */
  watch(options: WaitOptions = {}): GroupView {
    return new GroupView(this.kv, this.prefix, options.signal);
  }
}

/** A process's membership in a {@link Group}, from {@link Group.join}. */
export class GroupMembership implements AsyncDisposable {
  #value: string;
  /** @internal Made by {@link Group.join}. */
  constructor(
    /** The session whose lease the member key is attached to. */
    readonly session: Session,
    /** The member's id. */
    readonly id: string,
    /** The member's key, `<group>/<id>`. */
    readonly key: string,
    /** The create revision of the key: this incarnation of the membership. */
    readonly joinedAt: bigint,
    value: string,
    /** Header of the join. */
    readonly header: ResponseHeader,
  ) {
    this.#value = value;
  }

  /** The value last set through this handle. */
  get value(): string {
    return this.#value;
  }

  /**
   * Sets the member's value, only while the key is still this membership's (create revision
   * `joinedAt`); otherwise nothing is written and it rejects with LockLostError.
   */
  async set(value: string, options: WaitOptions = {}): Promise<ResponseHeader> {
    const result = await this.#ifMine(
      op.put(this.key, value, { lease: this.session.leaseId }),
      options,
    );
    this.#value = value;
    return result;
  }

  /** Leaves the group: deletes the key if it is still this membership's; gone already is fine. */
  async leave(options: WaitOptions = {}): Promise<void> {
    await this.#ifMine(op.delete(this.key), options).catch((error: unknown) => {
      if (!(error instanceof LockLostError)) throw error;
    });
  }

  /** Leaves, for `await using`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.leave();
  }

  async #ifMine(write: PutOp | DeleteOp, options: WaitOptions): Promise<ResponseHeader> {
    const result = await this.session.etcd
      .txn()
      .if(cmp.createRevision(this.key, '==', this.joinedAt))
      .then(write)
      .commit({ signal: options.signal, retry: 'guarded' });
    if (!result.succeeded) {
      throw new LockLostError(this.key, this.joinedAt, `${this.key} is no longer this member`);
    }
    return result.header;
  }
}

/** The events of a {@link GroupView}. */
export interface GroupViewEvents {
  /** A member joined (the first listing announces each member already there). */
  join: (member: GroupMemberInfo) => void;
  /** A member set a new value (or joined again on the same key, as another incarnation). */
  change: (member: GroupMemberInfo, previous: GroupMemberInfo) => void;
  /** A member left (left, session closed, lease expired). */
  leave: (previous: GroupMemberInfo) => void;
  /** The whole view: after the first listing, then once per watch response that changed it. */
  view: (view: GroupMembers) => void;
  /** The view failed for good; 'end' follows. */
  error: (error: EtcdError) => void;
  /** The view stopped. */
  end: () => void;
}

/**
 * The live members of a {@link Group}: an informer (one watch, resumed across reconnects and
 * compactions) over `<group>/`. Events per member, a `view` event per change, and an async
 * iterator of views that yields EVERY view in order (the first listing, then one per watch
 * response that changed the members). Leaving the loop closes the view.
 */
export class GroupView extends EventEmitter<GroupViewEvents> implements AsyncDisposable {
  readonly #prefix: string;
  readonly #informer: Informer;
  readonly #queues = new Set<GroupMembers[]>();
  #current: GroupMembers = { members: new Map(), revision: 0n };
  #synced = false;
  /** A view was published (the first listing's, at least). */
  #listed = false;
  #pending = false;
  #ended = false;
  #failure: EtcdError | undefined;
  readonly #waiting = new Set<() => void>();

  /** @internal Made by {@link Group.watch}. */
  constructor(kv: KV, prefix: string, signal: AbortSignal | undefined) {
    super();
    this.#prefix = prefix;
    const informer = new Informer(kv, { prefix, signal });
    this.#informer = informer;
    informer.on('add', (kv) => {
      this.emit('join', memberOf(prefix, kv));
      this.#changed();
    });
    informer.on('update', (kv, before) => {
      this.emit('change', memberOf(prefix, kv), memberOf(prefix, before));
      this.#changed();
    });
    informer.on('delete', (before) => {
      this.emit('leave', memberOf(prefix, before));
      this.#changed();
    });
    informer.on('synced', () => {
      this.#synced = true;
      this.#changed();
    });
    informer.on('error', (error) => {
      this.#failure = error;
      this.emit('error', error);
    });
    informer.on('end', () => {
      this.#ended = true;
      this.#wakeAll();
      this.emit('end');
    });
  }

  /** The members as of {@link GroupMembers.revision} (empty before the first listing). */
  get current(): GroupMembers {
    return this.#current;
  }

  /** Stops watching; 'end' is emitted. Idempotent. */
  close(): Promise<void> {
    return this.#informer.close();
  }

  /** Closes, for `await using`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  /**
   * Every view in order from the call: the current one (once listed), then each later one; ends
   * when the view closes, throws its failure. Leaving the loop closes the view.
   */
  async *[Symbol.asyncIterator](): AsyncGenerator<GroupMembers, void, undefined> {
    const queue: GroupMembers[] = this.#listed ? [this.#current] : [];
    this.#queues.add(queue);
    try {
      for (;;) {
        const view = queue.shift();
        if (view !== undefined) {
          yield view;
          continue;
        }
        if (this.#ended) break;
        await new Promise<void>((resolve) => this.#waiting.add(resolve));
      }
      if (this.#failure) throw this.#failure;
    } finally {
      this.#queues.delete(queue);
      await this.close();
    }
  }

  #wakeAll(): void {
    for (const wake of this.#waiting) wake();
    this.#waiting.clear();
  }

  /** Publishes the view once the informer applied one revision's events (it does so synchronously). */
  #changed(): void {
    if (this.#pending || !this.#synced) return;
    this.#pending = true;
    queueMicrotask(() => {
      this.#pending = false;
      if (this.#ended) return;
      this.#listed = true;
      this.#current = viewOf(this.#prefix, this.#informer.values(), this.#informer.revision);
      for (const queue of this.#queues) queue.push(this.#current);
      this.#wakeAll();
      this.emit('view', this.#current);
    });
  }
}

function memberOf(prefix: string, kv: KeyValue): GroupMemberInfo {
  return { id: kv.keyText().slice(prefix.length), value: kv.text(), joinedAt: kv.createRevision };
}

function viewOf(prefix: string, kvs: readonly KeyValue[], revision: bigint): GroupMembers {
  const members = kvs
    .map((kv) => memberOf(prefix, kv))
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return { members: new Map(members.map((member) => [member.id, member])), revision };
}
