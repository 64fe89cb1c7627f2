import { describe, expect, it } from 'vitest';
import { checkLinearizable } from '../src/checker/check.js';
import { type RegisterInput, type RegisterOutput, registerModel } from '../src/models/register.js';
import { renderReport } from '../src/report/html.js';
import { history } from './histories.js';

describe('HTML report', () => {
  it('draws every operation as a bar, the conflicting ones marked, faults shaded', () => {
    const ops = history<RegisterInput, RegisterOutput>([
      {
        p: 0,
        start: 0,
        end: 1,
        input: { type: 'put', key: 'x', value: 'a' },
        output: { type: 'put', revision: 2n },
      },
      {
        p: 0,
        start: 2,
        end: 3,
        input: { type: 'put', key: 'x', value: 'b' },
        output: { type: 'put', revision: 3n },
      },
      {
        p: 1,
        start: 4,
        end: 5,
        input: { type: 'casRevision', key: 'x', expectRevision: 2n, expectValue: 'a', value: 'c' },
        output: { type: 'cas', succeeded: true, revision: 4n },
      },
      { p: 2, start: 0.5, input: { type: 'put', key: 'y', value: '<z>' }, status: 'unknown' },
    ]);
    const result = checkLinearizable(registerModel(), ops);
    expect(result.valid).toBe(false);
    const html = renderReport({
      workload: 'register',
      target: 'hand-built',
      valid: result.valid,
      history: ops,
      anomalies: result.anomalies,
      faults: [{ name: 'pause', start: 1, end: 2 }],
    });
    expect(html.startsWith('<!doctype html>')).toBe(true);
    expect(html).toContain(
      '<strong>NOT linearizable</strong>: 4 operations, 1 anomalies, 1 faults (pause)',
    );
    // The anomaly's zoom and the whole history: the 3 conflicting operations are red in both.
    expect(html.match(/class="ok marked"/g)).toHaveLength(6);
    expect(html.match(/class="unknown"/g)).toHaveLength(2);
    expect(html.match(/class="fault"/g)).toHaveLength(2);
    // Values are escaped, bigints shown.
    expect(html).toContain('&quot;&lt;z&gt;&quot;');
    expect(html).toContain('&quot;expectRevision&quot;:&quot;2n&quot;');
    expect(html).not.toContain('<z>');
  });

  it('draws a history of 300,000 operations (too many to spread as arguments)', () => {
    const count = 300_000;
    const ops = history<RegisterInput, RegisterOutput>(
      Array.from({ length: count }, (_, i) => ({
        p: i % 6,
        start: i,
        end: i + 0.5,
        input: { type: 'get', key: 'x' },
        output: { type: 'get', value: 'a', modRevision: 2n },
      })),
    );
    const html = renderReport({
      workload: 'register',
      target: 'hand-built',
      valid: true,
      history: ops,
      anomalies: [],
      faults: [],
    });
    expect(html).toContain(`<title>${count} operations of 6 processes over 300000 ms</title>`);
    expect(html.match(/class="ok"/g)).toHaveLength(count);
    // About 4 s of CPU for an 80 MB page: at a load of 30 it passed the 30 s default.
  }, 120_000);
});
