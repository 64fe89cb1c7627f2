import { describe, expect, it } from 'vitest';
import { ProposalKind, ProposalLog } from '../../src/consensus/proposals.js';

/** The largest Put request (bytes) that passes a 1024-byte limit for a member id. */
function largestPut(memberId: bigint): number {
  const log = new ProposalLog({ memberId, maxRequestBytes: 1024 });
  let size = 900;
  for (;;) {
    try {
      log.propose(ProposalKind.put, size + 1);
      size++;
    } catch {
      return size;
    }
  }
}

describe('ProposalLog', () => {
  it('starts where a fresh single-member etcd is: term 2, index 4', () => {
    const log = new ProposalLog({ memberId: 1n, maxRequestBytes: 1024 });
    expect(log.term).toBe(2);
    expect(log.index).toBe(4);
    log.propose(ProposalKind.txn, 10);
    expect(log.index).toBe(5);
  });

  it('limits the request wrapped as etcd proposes it, whose id length follows the member id', () => {
    // Measured on etcd 3.4.23 with --max-request-bytes 1024 and a member id whose low 16 bits are
    // 13418: a Put of key "k" and a 1002-byte value (1008 bytes) was the largest that passed.
    expect(largestPut(0x1234_0000_0000_346an)).toBe(1008);
    // The request id is the low 16 bits of the member id shifted up 48 bits, so its varint is
    // 8, 9 or 10 bytes long.
    expect(largestPut(0x5n)).toBe(1009);
    expect(largestPut(0x8000n)).toBe(1007);
  });

  it('a rejected proposal takes no log entry', () => {
    const log = new ProposalLog({ memberId: 1n, maxRequestBytes: 100 });
    expect(() => log.propose(ProposalKind.put, 100)).toThrow('etcdserver: request is too large');
    expect(log.index).toBe(4);
  });
});
