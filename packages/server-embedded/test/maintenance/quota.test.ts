import { describe, expect, it } from 'vitest';
import { EtcdServerError } from '../../src/index.js';
import { BackendQuota, putCost, requestCost, txnCost } from '../../src/maintenance/quota.js';
import { b } from '../support/bytes.js';
import { op } from '../support/kv.js';

describe('backend quota', () => {
  it('costs a put 256 bytes plus its key and value, a txn its larger branch, a lease 64', () => {
    expect(putCost({ key: b('ab'), value: b('xyz') })).toBe(261);
    const txn = {
      success: [op.put('a', '1'), op.del('b'), op.txn([], [op.put('c', '22')])],
      failure: [op.put('long-key', 'v'.repeat(100))],
    };
    expect(txnCost(txn)).toBe(Math.max(258 + 259, 256 + 8 + 100));
    expect(txnCost({ success: [op.range('a'), op.del('b')] })).toBe(0);
    expect(requestCost({ kind: 'leaseGrant' })).toBe(64);
    expect(requestCost({ kind: 'deleteRange' })).toBe(0);
  });

  it('refuses a write that would reach the quota, raising NOSPACE first', () => {
    let size = 1000;
    let raised = 0;
    const quota = new BackendQuota({
      quotaBytes: 1400,
      size: () => size,
      raiseNoSpace: () => raised++,
    });
    quota.check({ kind: 'put', request: { key: b('k'), value: b('v'.repeat(142)) } }); // 1399
    expect(() =>
      quota.check({ kind: 'put', request: { key: b('k'), value: b('v'.repeat(143)) } }),
    ).toThrow(new EtcdServerError('NO_SPACE'));
    expect(raised).toBe(1);
    // Deletes and reads cost nothing and always pass.
    size = 5000;
    quota.check({ kind: 'deleteRange' });
    quota.check({ kind: 'txn', request: { success: [op.del('a')] } });
    expect(raised).toBe(1);
  });

  it('is off with a negative quota', () => {
    const quota = new BackendQuota({ quotaBytes: -1, size: () => 1e12, raiseNoSpace: () => {} });
    quota.check({ kind: 'leaseGrant' });
  });
});
