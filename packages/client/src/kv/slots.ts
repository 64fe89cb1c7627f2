// State a sibling package keeps per client or per session (the recipes' STM queue, the watches a
// recipe closes late), held by that object and gone with it, instead of module-level maps keyed by it.

/** @internal One kind of per-object state: `create` makes its value on first use. */
export class Slot<T> {
  constructor(readonly create: () => T) {}
}

/** @internal Per-object state kept per name (a lock's key, a queue's prefix). */
export class KeyedSlot<T> {
  /** The values by name. */
  readonly values = new Slot(() => new Map<string, T>());

  constructor(readonly create: () => T) {}
}

/** @internal The values of the slots an object was asked for. */
export class Slots {
  readonly #values = new Map<Slot<unknown>, unknown>();

  /** The value of `slot` for this object, made on first use. */
  get<T>(slot: Slot<T>): T {
    if (this.#values.has(slot)) return this.#values.get(slot) as T;
    const value = slot.create();
    this.#values.set(slot, value);
    return value;
  }

  /** The value of `slot` under `name` for this object, made on first use. */
  keyed<T>(slot: KeyedSlot<T>, name: string): T {
    const values = this.get(slot.values);
    let value = values.get(name);
    if (value === undefined) {
      value = slot.create();
      values.set(name, value);
    }
    return value;
  }
}
