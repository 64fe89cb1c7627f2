// Password hashes. etcd stores bcrypt hashes; the embedded server only has to keep passwords out
// of memory in clear, so it uses scrypt with a per-user salt and a cost low enough that tests
// adding many users stay fast (the hash never leaves the process).
import { randomBytes, scryptSync, timingSafeEqual } from 'node:crypto';

/** A salted password hash. */
export interface PasswordHash {
  readonly salt: Buffer;
  readonly hash: Buffer;
}

const SALT_BYTES = 16;
const HASH_BYTES = 32;
/** scrypt's N: 2^10 takes about a millisecond, against 2^14 (Node's default) at tens of ms. */
const COST = 1024;

/** Hashes `password` with a fresh salt. */
export function hashPassword(password: string): PasswordHash {
  const salt = randomBytes(SALT_BYTES);
  return { salt, hash: derive(password, salt) };
}

/** Whether `password` is the one `stored` was made from (compared in constant time). */
export function verifyPassword(stored: PasswordHash, password: string): boolean {
  return timingSafeEqual(stored.hash, derive(password, stored.salt));
}

function derive(password: string, salt: Buffer): Buffer {
  return scryptSync(password, salt, HASH_BYTES, { N: COST });
}
