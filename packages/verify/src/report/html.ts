// A self-contained HTML report: each process's operations as bars in time, the conflict marked.
import type { Anomaly } from '../checker/check.js';
import { type History, type Operation, toJsonValue } from '../history.js';
import type { FaultEvent } from '../workloads/runner.js';

/** What a report shows; a VerifyResult fits. */
export interface ReportInput {
  readonly workload: string;
  readonly target: string;
  readonly valid: boolean | 'unknown';
  readonly history: History;
  readonly anomalies: readonly Anomaly[];
  readonly faults: readonly FaultEvent[];
}

const escapeHtml = (text: string): string =>
  text.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!,
  );

const LANE = 14;
const WIDTH = 1100;
const LEFT = 48;

/**
 * One SVG timeline of `ops`: a lane per process, a bar per operation from its start to its end
 * (to the right edge when unknown), `marked` operations in red, fault periods shaded.
 */
export function timelineSvg(
  ops: readonly Operation[],
  marked: ReadonlySet<number>,
  faults: readonly FaultEvent[],
  describe: (op: Operation) => string = (op) =>
    `${JSON.stringify(toJsonValue(op.input))} -> ${JSON.stringify(toJsonValue(op.output) ?? null)}`,
): string {
  if (ops.length === 0) return '<p>no operations</p>';
  const processes = [...new Set(ops.map((op) => op.process))].sort((a, b) => a - b);
  const lane = new Map(processes.map((p, i) => [p, i]));
  // Loops, not Math.min(...spread): a fast run's hundreds of thousands of operations overflow the
  // stack as arguments.
  let t0 = Number.POSITIVE_INFINITY;
  let t1 = Number.NEGATIVE_INFINITY;
  for (const op of ops) {
    t0 = Math.min(t0, op.start);
    t1 = Math.max(t1, Number.isFinite(op.end) ? op.end : op.start);
  }
  t1 = Math.max(t1, t0 + 1);
  const x = (t: number) => LEFT + ((Math.min(t, t1) - t0) / (t1 - t0)) * (WIDTH - LEFT - 10);
  const height = processes.length * LANE + 24;
  const parts: string[] = [];
  for (const f of faults) {
    if (f.end < t0 || f.start > t1) continue;
    parts.push(
      `<rect x="${x(Math.max(f.start, t0)).toFixed(1)}" y="0" width="${Math.max(1, x(f.end) - x(Math.max(f.start, t0))).toFixed(1)}" height="${height - 20}" class="fault"><title>${escapeHtml(f.name)}</title></rect>`,
    );
  }
  for (const [p, i] of lane)
    parts.push(`<text x="2" y="${i * LANE + 11}" class="lane">p${p}</text>`);
  for (const op of ops) {
    const y = lane.get(op.process)! * LANE + 2;
    const end = Number.isFinite(op.end) ? op.end : t1;
    const cls = `${op.status}${marked.has(op.id) ? ' marked' : ''}`;
    parts.push(
      `<rect x="${x(op.start).toFixed(1)}" y="${y}" width="${Math.max(1.5, x(end) - x(op.start)).toFixed(1)}" height="${LANE - 4}" class="${cls}"><title>${escapeHtml(`#${op.id} p${op.process} ${op.status}: ${describe(op)}`)}</title></rect>`,
    );
  }
  parts.push(
    `<text x="${LEFT}" y="${height - 6}" class="axis">${(0).toFixed(0)} ms</text><text x="${WIDTH - 80}" y="${height - 6}" class="axis">${(t1 - t0).toFixed(0)} ms</text>`,
  );
  return `<svg xmlns="http://www.w3.org/2000/svg" role="img" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}"><title>${ops.length} operations of ${processes.length} processes over ${(t1 - t0).toFixed(0)} ms</title>${parts.join('')}</svg>`;
}

/** The report as one HTML page with no outside resources. */
export function renderReport(input: ReportInput): string {
  const marked = new Set(input.anomalies.flatMap((a) => a.ops.map((op) => op.id)));
  const sections = input.anomalies.map((anomaly, i) => {
    const ids = new Set(anomaly.ops.map((op) => op.id));
    let from = Number.POSITIVE_INFINITY;
    let to = Number.NEGATIVE_INFINITY;
    for (const op of anomaly.ops) {
      from = Math.min(from, op.start);
      to = Math.max(to, Number.isFinite(op.end) ? op.end : op.start);
    }
    const context = input.history.filter(
      (op) => ids.has(op.id) || (op.status !== 'fail' && op.start <= to && op.end >= from),
    );
    return `<section><h2>Anomaly ${i + 1}: ${escapeHtml(anomaly.model)} ${escapeHtml(anomaly.kind)}${anomaly.minimal ? ' (minimal)' : ''}</h2>
<p>${escapeHtml(anomaly.explanation)}</p>
<pre>${anomaly.timeline.map(escapeHtml).join('\n')}</pre>
<p>The conflicting operations (red) among those running at the time:</p>
${timelineSvg(context, ids, input.faults)}</section>`;
  });
  const verdict =
    input.valid === true
      ? 'linearizable'
      : input.valid === false
        ? 'NOT linearizable'
        : 'undecided (time budget ran out)';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>etcdkit-verify: ${escapeHtml(input.workload)} on ${escapeHtml(input.target)}</title>
<style>
body { font: 14px system-ui, sans-serif; margin: 24px; color: #222; }
pre { background: #f4f4f4; padding: 8px; overflow-x: auto; }
svg { border: 1px solid #ddd; margin: 8px 0; }
rect.ok { fill: #7a9cc6; } rect.fail { fill: #ddd; } rect.unknown { fill: #f0c36d; opacity: 0.6; }
rect.marked { fill: #d9302c; stroke: #000; stroke-width: 1; opacity: 1; }
rect.fault { fill: #f6d8d8; opacity: 0.5; }
text.lane, text.axis { font: 10px monospace; fill: #555; }
.valid { color: #1a7f37; } .invalid { color: #d9302c; }
</style></head><body>
<h1>${escapeHtml(input.workload)} on ${escapeHtml(input.target)}</h1>
<p class="${input.valid === true ? 'valid' : 'invalid'}"><strong>${verdict}</strong>: ${input.history.length} operations, ${input.anomalies.length} anomalies, ${input.faults.length} faults (${escapeHtml([...new Set(input.faults.map((f) => f.name))].join(', ') || 'none')}).</p>
<p>Bars: blue ok, yellow unknown (may take effect any time after its start), grey failed, red the conflict; shaded: a fault was on.</p>
${sections.join('\n')}
<section><h2>Whole history</h2>${timelineSvg(input.history, marked, input.faults)}</section>
</body></html>
`;
}
