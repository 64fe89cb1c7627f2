// The merged key permissions of one user (etcd's unifiedRangePermissions), checked directly: the
// permission forms, coverage of ranges by several intervals, and etcd's answers for odd requests.
import { describe, expect, it } from 'vitest';
import { isValidPermissionRange, KeyPermissions } from '../../src/auth/key-permissions.js';
import { type KeyPermission, PermissionType } from '../../src/auth/types.js';
import { b } from '../support/bytes.js';

const { READ, WRITE, READWRITE } = PermissionType;
const NUL = '\0';

function permission(type: PermissionType, key: string, rangeEnd = ''): KeyPermission {
  return { type, key: b(key), rangeEnd: b(rangeEnd) };
}

function can(permissions: KeyPermissions, access: 'read' | 'write', key: string, end = '') {
  return permissions.allows(access, b(key), b(end));
}

describe('key permissions', () => {
  it('one key allows that key only, for its type', () => {
    const user = new KeyPermissions([permission(READ, 'k')]);
    expect(can(user, 'read', 'k')).toBe(true);
    expect(can(user, 'read', 'k0')).toBe(false);
    expect(can(user, 'read', 'j')).toBe(false);
    expect(can(user, 'write', 'k')).toBe(false);
    // A range holding only that key is covered by it.
    expect(can(user, 'read', 'k', `k${NUL}`)).toBe(true);
    expect(can(user, 'read', 'k', 'l')).toBe(false);
  });

  it('a range [key, end) holds its keys and sub-ranges, not its end', () => {
    const user = new KeyPermissions([permission(READWRITE, 'b', 'd')]);
    expect(['b', 'c', 'czzz'].map((key) => can(user, 'write', key))).toEqual([true, true, true]);
    expect(['a', 'd', 'd0'].map((key) => can(user, 'write', key))).toEqual([false, false, false]);
    expect(can(user, 'read', 'b', 'd')).toBe(true);
    expect(can(user, 'read', 'c', 'd')).toBe(true);
    expect(can(user, 'read', 'a', 'c')).toBe(false);
    expect(can(user, 'read', 'b', 'e')).toBe(false);
    expect(can(user, 'read', 'b', NUL)).toBe(false);
  });

  it('"\\0" as range end holds every key from the key on', () => {
    const user = new KeyPermissions([permission(READ, 'm', NUL)]);
    expect(can(user, 'read', 'm')).toBe(true);
    expect(can(user, 'read', '\xff\xff')).toBe(true);
    expect(can(user, 'read', 'l')).toBe(false);
    expect(can(user, 'read', 'm', NUL)).toBe(true);
    expect(can(user, 'read', 'n', NUL)).toBe(true);
    expect(can(user, 'read', 'l', NUL)).toBe(false);
    const everything = new KeyPermissions([permission(READ, NUL, NUL)]);
    expect(can(everything, 'read', NUL, NUL)).toBe(true);
  });

  it('intervals add up across permissions as long as no gap is left', () => {
    const pieces = new KeyPermissions([
      permission(READ, 'a', 'c'),
      permission(READ, 'c', 'e'),
      permission(READ, 'e', NUL),
    ]);
    expect(can(pieces, 'read', 'a', NUL)).toBe(true);
    expect(can(pieces, 'read', 'b', 'f')).toBe(true);
    const gap = new KeyPermissions([permission(READ, 'a', 'c'), permission(READ, 'd', 'f')]);
    expect(can(gap, 'read', 'a', 'f')).toBe(false);
    expect(can(gap, 'read', 'd', 'e')).toBe(true);
    // Overlapping and nested intervals, in any order of grant.
    const nested = new KeyPermissions([
      permission(READ, 'c', 'g'),
      permission(READ, 'a', 'd'),
      permission(READ, 'b', 'c'),
    ]);
    expect(can(nested, 'read', 'a', 'g')).toBe(true);
  });

  it('READWRITE grants both; READ and WRITE only their own; unknown types nothing', () => {
    const user = new KeyPermissions([
      permission(READ, 'r'),
      permission(WRITE, 'w'),
      permission(READWRITE, 'rw'),
      { type: 7 as PermissionType, key: b('x'), rangeEnd: b('') },
    ]);
    expect([can(user, 'read', 'r'), can(user, 'write', 'r')]).toEqual([true, false]);
    expect([can(user, 'read', 'w'), can(user, 'write', 'w')]).toEqual([false, true]);
    expect([can(user, 'read', 'rw'), can(user, 'write', 'rw')]).toEqual([true, true]);
    expect([can(user, 'read', 'x'), can(user, 'write', 'x')]).toEqual([false, false]);
  });

  it("a request whose end is below its key is judged by etcd's overlap rule", () => {
    const user = new KeyPermissions([permission(READ, 'a', 'z')]);
    // [m, c) selects nothing; it overlaps [a, z) the way etcd compares intervals, so it passes.
    expect(can(user, 'read', 'm', 'c')).toBe(true);
    const narrow = new KeyPermissions([permission(READ, 'n', 'p')]);
    expect(can(narrow, 'read', 'm', 'c')).toBe(false);
  });

  it('valid permission ranges: a key, and an end that is empty, "\\0" or above the key', () => {
    const valid = (key: string, end: string) => isValidPermissionRange(b(key), b(end));
    expect([valid('a', ''), valid('a', NUL), valid('a', 'b'), valid(NUL, NUL)]).toEqual([
      true,
      true,
      true,
      true,
    ]);
    expect([valid('', ''), valid('', 'b'), valid('b', 'a'), valid('b', 'b')]).toEqual([
      false,
      false,
      false,
      false,
    ]);
  });
});
