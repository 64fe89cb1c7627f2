// Slots: the per-object state sibling packages keep on a client or a session.
import { describe, expect, it } from 'vitest';
import { KeyedSlot, Slot, Slots } from '../../src/kv/slots.js';

describe('Slots', () => {
  it('makes a slot value once per object, on first use', () => {
    let made = 0;
    const slot = new Slot(() => ({ n: ++made }));
    const a = new Slots();
    const b = new Slots();
    expect(made).toBe(0);
    const first = a.get(slot);
    expect(a.get(slot)).toBe(first);
    expect(first).toEqual({ n: 1 });
    expect(b.get(slot)).toEqual({ n: 2 });
    expect(made).toBe(2);
  });

  it('keeps a keyed slot value per name, and forgets a name deleted from its values', () => {
    let made = 0;
    const slot = new KeyedSlot(() => ({ n: ++made }));
    const slots = new Slots();
    const x = slots.keyed(slot, 'x');
    expect(slots.keyed(slot, 'x')).toBe(x);
    expect(slots.keyed(slot, 'y')).toEqual({ n: 2 });
    expect([...slots.get(slot.values).keys()]).toEqual(['x', 'y']);
    slots.get(slot.values).delete('x');
    expect(slots.keyed(slot, 'x')).toEqual({ n: 3 });
  });

  it('tells two slots made by the same function apart', () => {
    const make = () => [] as string[];
    const one = new Slot(make);
    const two = new Slot(make);
    const slots = new Slots();
    slots.get(one).push('one');
    expect(slots.get(two)).toEqual([]);
    expect(slots.get(one)).toEqual(['one']);
  });
});
