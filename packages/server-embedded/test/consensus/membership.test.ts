import { describe, expect, it } from 'vitest';
import { Membership, memberIdOf, parsePeerUrls } from '../../src/consensus/membership.js';
import { ProposalLog } from '../../src/consensus/proposals.js';
import { EtcdServerError } from '../../src/index.js';

const self = {
  clusterId: 1n,
  memberId: 0x1234n,
  name: 'default',
  peerUrls: ['http://localhost:2380'],
  clientUrls: ['http://127.0.0.1:2379'],
};

function membership(wallClockMs: () => number) {
  const proposals = new ProposalLog({ memberId: self.memberId, maxRequestBytes: 1 << 20 });
  return { proposals, members: new Membership(self, proposals, wallClockMs) };
}

describe('Membership', () => {
  it('derives a new member id from its sorted peer URLs and the second, as etcd does', () => {
    let now = 1_700_000_000_500;
    const { members } = membership(() => now);
    const added = members.add(['http://b:2', 'http://a:1'], true);
    expect(added.peerUrls).toEqual(['http://a:1', 'http://b:2']);
    expect(added.id).toBe(memberIdOf(['http://a:1', 'http://b:2'], 1_700_000_000_999));
    expect(added.id).not.toBe(memberIdOf(['http://a:1', 'http://b:2'], 1_700_000_001_000));
    // The same URLs within the same second: the same id, already a member.
    expect(() => members.add(['http://a:1', 'http://b:2'], true)).toThrow(
      new EtcdServerError('MEMBER_EXISTS'),
    );
    members.remove(added.id);
    // Removed ids never come back: etcd answers "member not found".
    expect(() => members.add(['http://a:1', 'http://b:2'], true)).toThrow(
      new EtcdServerError('MEMBER_NOT_FOUND'),
    );
    now += 1000;
    expect(members.add(['http://a:1', 'http://b:2'], true).id).not.toBe(added.id);
  });

  it('takes one raft entry per change that passes the checks made before proposing', () => {
    const { members, proposals } = membership(() => 0);
    const start = proposals.index;
    expect(() => members.remove(self.memberId)).toThrow(
      new EtcdServerError('MEMBER_NOT_ENOUGH_STARTED'),
    );
    expect(() => members.promote(42n)).toThrow(new EtcdServerError('MEMBER_NOT_FOUND'));
    expect(() => members.add([], true)).toThrow(new EtcdServerError('MEMBER_BAD_URLS'));
    expect(proposals.index).toBe(start);
    expect(() => members.remove(42n)).toThrow(new EtcdServerError('MEMBER_NOT_FOUND'));
    expect(() => members.promote(self.memberId)).toThrow(new EtcdServerError('MEMBER_NOT_LEARNER'));
    members.update(self.memberId, ['http://x:1']);
    expect(proposals.index).toBe(start + 3);
  });

  it('parses peer URLs as etcd does: http(s) host:port without a path, or unix', () => {
    expect(
      parsePeerUrls([' HTTP://b:2 ', 'https://[::1]:2380', 'unix://sock', 'http://a:1?x']),
    ).toEqual(['http://a:1?x', 'http://b:2', 'https://[::1]:2380', 'unix://sock']);
    for (const bad of ['http://a', 'http://a:1/p', 'http://a:1:2', 'ftp://a:1', 'a:1', '']) {
      expect(() => parsePeerUrls([bad]), bad).toThrow(new EtcdServerError('MEMBER_BAD_URLS'));
    }
  });
});
