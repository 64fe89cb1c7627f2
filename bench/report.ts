// Turns the suites' results into docs/benchmarks.md and the chart beside it (docs/benchmarks.svg),
// with the machine they ran on: the figures in the guides and READMEs are quoted from that page.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';

/** One row of a suite's table: column name to cell. */
export type Row = Record<string, string | number>;

/**
 * One bar of the chart: etcdkit's figure divided by its baseline's, measured in the same run.
 * Below 1 etcdkit costs less (or takes less time). Bars of one `group` share a heading that names
 * what is measured and the baseline.
 */
export interface ChartBar {
  readonly group: string;
  readonly label: string;
  readonly ratio: number;
}

/** What a suite's report() may return: rows alone, or rows with bars for the chart. */
export type SuiteReport = Row[] | { readonly rows: Row[]; readonly chart?: readonly ChartBar[] };

/** A suite's outcome, as run.ts collected it. */
export interface SuiteResult {
  readonly name: string;
  readonly description: string;
  readonly rows: Row[];
  readonly chart: readonly ChartBar[];
  /** Seconds the suite took. */
  readonly seconds: number;
  /**
   * When the suite was rerun apart from the page's run (`--update`), and the load average it
   * ended under.
   */
  readonly rerun?: string;
}

/** Rows and chart bars of a report, whichever shape it came in. */
export function normalize(report: SuiteReport): { rows: Row[]; chart: readonly ChartBar[] } {
  return Array.isArray(report) ? { rows: report, chart: [] } : { chart: [], ...report };
}

/** The ratio of two measurements as the tables print it: "0.42x". */
export function ratio(ours: number, theirs: number): string {
  return theirs > 0 ? `${(ours / theirs).toFixed(2)}x` : 'n/a';
}

/** The median of some numbers (NaN for none). */
export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

function versionOf(command: string, args: string[], pattern: RegExp): string {
  try {
    const output = execFileSync(command, args, {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    return pattern.exec(output)?.[1] ?? output.trim().split('\n')[0] ?? 'unknown';
  } catch {
    return 'not installed';
  }
}

/** The machine and the programs a run was measured with, as lines of the page. */
export function machineLines(): string[] {
  const cpus = os.cpus();
  const etcd = process.env.ETCDKIT_ETCD_BIN ?? 'etcd';
  return [
    `- CPU: ${cpus[0]?.model.trim() ?? 'unknown'}, ${cpus.length} cores`,
    `- memory: ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB; ${os.type()} ${os.release()} (${os.arch()})`,
    `- load average when the page was written: ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(', ')} (1, 5, 15 min)`,
    `- Node.js ${process.version}; etcd ${versionOf(etcd, ['--version'], /etcd Version: (\S+)/)}; Go ${versionOf('go', ['version'], /go version go(\S+)/)}`,
  ];
}

function escapeCell(value: string | number): string {
  return String(value).replaceAll('|', '\\|');
}

function table(rows: readonly Row[]): string[] {
  if (rows.length === 0) return ['(no rows)'];
  const columns = [...new Set(rows.flatMap((row) => Object.keys(row)))];
  return [
    `| ${columns.join(' | ')} |`,
    `| ${columns.map(() => '---').join(' | ')} |`,
    ...rows.map((row) => `| ${columns.map((c) => escapeCell(row[c] ?? '')).join(' | ')} |`),
  ];
}

function escapeXml(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}

// The chart's log axis: its ticks, and the range every bar is clamped into.
const TICKS = [0.01, 0.03, 0.1, 0.3, 1, 3];
const AXIS_MIN = 0.01;
const AXIS_MAX = 4;

/**
 * A horizontal bar chart of ratios on a log axis, grouped under headings that name each group's
 * baseline: a bar runs from 1x (level with the baseline) to its ratio, leftwards when etcdkit
 * costs less, so 0.02x is as visible as 2x would be.
 */
export function renderChart(bars: readonly ChartBar[]): string {
  const labelWidth = 330;
  const plotWidth = 470;
  const rowHeight = 20;
  const headingHeight = 26;
  const top = 62;
  const span = Math.log(AXIS_MAX / AXIS_MIN);
  const x = (value: number) => {
    const clamped = Math.min(AXIS_MAX, Math.max(AXIS_MIN, value));
    return labelWidth + (Math.log(clamped / AXIS_MIN) / span) * plotWidth;
  };
  const groups = [...new Set(bars.map((bar) => bar.group))];
  const height = top + groups.length * headingHeight + bars.length * rowHeight + 34;
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${labelWidth + plotWidth + 40}" height="${height}" font-family="sans-serif" font-size="12">`,
    '<title>etcdkit against its baselines, measured in the same run</title>',
    '<rect width="100%" height="100%" fill="white"/>',
    '<text x="10" y="18" font-weight="bold">etcdkit / its baseline, measured in the same run (median ratio; log scale)</text>',
    '<text x="10" y="36" fill="#555">A bar runs from 1x (level) to the ratio: leftwards, etcdkit costs less CPU or time; rightwards, more.</text>',
  ];
  const axisBottom = height - 26;
  for (const tick of TICKS) {
    const tx = x(tick).toFixed(1);
    parts.push(
      `<line x1="${tx}" x2="${tx}" y1="${top - 8}" y2="${axisBottom}" stroke="${tick === 1 ? '#888' : '#e3e3e3'}"${tick === 1 ? ' stroke-dasharray="4 3"' : ''}/>`,
      `<text x="${tx}" y="${axisBottom + 14}" text-anchor="middle" fill="#555">${tick}x</text>`,
      `<text x="${tx}" y="${top - 12}" text-anchor="middle" fill="#555">${tick}x</text>`,
    );
  }
  let y = top;
  const one = x(1);
  for (const group of groups) {
    parts.push(`<text x="10" y="${y + 17}" font-weight="bold">${escapeXml(group)}</text>`);
    y += headingHeight;
    for (const bar of bars.filter((b) => b.group === group)) {
      const end = x(bar.ratio);
      const left = Math.min(one, end);
      const width = Math.max(1, Math.abs(end - one));
      const color = bar.ratio > 1 ? '#d9822b' : '#2b7bd9';
      // The figure sits beside the 1x line, on the side the bar does not take.
      const textX = bar.ratio > 1 ? end + 4 : one + 4;
      parts.push(
        `<text x="${labelWidth - 8}" y="${y + 14}" text-anchor="end">${escapeXml(bar.label)}</text>`,
        `<rect x="${left.toFixed(1)}" y="${y + 3}" width="${width.toFixed(1)}" height="${rowHeight - 6}" fill="${color}"/>`,
        `<text x="${textX.toFixed(1)}" y="${y + 14}">${bar.ratio.toFixed(bar.ratio < 0.1 ? 3 : 2)}x</text>`,
      );
      y += rowHeight;
    }
  }
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}

/** The measured part of a run, kept as docs/benchmarks.json so the page can be drawn again. */
interface RunRecord {
  readonly date: string;
  readonly machine: string[];
  readonly results: readonly SuiteResult[];
}

/**
 * Writes docs/benchmarks.json, docs/benchmarks.md and docs/benchmarks.svg from a whole run's
 * results; `machine` and `date` default to this machine now (given when a stored run is redrawn).
 */
export function writeBenchmarksPage(
  results: readonly SuiteResult[],
  docsDir: URL,
  recorded: Omit<RunRecord, 'results'> = {
    date: new Date().toISOString().slice(0, 10),
    machine: machineLines(),
  },
): void {
  const record: RunRecord = { ...recorded, results };
  writeFileSync(new URL('benchmarks.json', docsDir), `${JSON.stringify(record, null, 1)}\n`);
  const bars = results.flatMap((r) => r.chart);
  writeFileSync(new URL('benchmarks.svg', docsDir), renderChart(bars));
  const lines = [
    '# Benchmarks',
    '',
    'Written by `npm run bench` (every suite, in one run; suites rerun apart with `--update` say',
    "so under their heading, with the load they ran under); do not edit by hand (a suite's method",
    'is bench/methods/<suite>.md, its dated studies under ### headings bench/findings/<suite>.md). Each figure is',
    'measured beside its alternative in the same run, over several rounds whose order rotates, and',
    "reported as a median; ratios are etcdkit's figure divided by the alternative's. This machine is",
    'noisy: identical configurations can differ by 20% in one pass.',
    '',
    `Run on ${record.date}:`,
    ...record.machine,
    '',
    '![etcdkit against the alternatives](benchmarks.svg)',
  ];
  for (const result of results) {
    lines.push(
      '',
      `## ${result.name}`,
      '',
      `${result.description} (${result.seconds.toFixed(0)} s${result.rerun ? `; rerun on ${result.rerun}` : ''}).`,
    );
    // How a suite measures, where it needs more than its description, is kept beside the bench.
    const method = new URL(`methods/${result.name}.md`, import.meta.url);
    if (existsSync(method)) lines.push('', readFileSync(method, 'utf8').trim());
    lines.push('', ...table(result.rows));
    // Dated studies of a suite's rows (profiles, before/after runs) outlive the next run's table.
    const findings = new URL(`findings/${result.name}.md`, import.meta.url);
    if (existsSync(findings)) lines.push('', readFileSync(findings, 'utf8').trim());
  }
  writeFileSync(new URL('benchmarks.md', docsDir), `${lines.join('\n')}\n`);
}

/**
 * Replaces some suites' results in docs/benchmarks.json with a run of those suites (marked with
 * when it ran and the load it ran under) and draws the page again; the others keep their run.
 */
export function updateBenchmarksPage(rerunResults: readonly SuiteResult[], docsDir: URL): void {
  const record = JSON.parse(readFileSync(new URL('benchmarks.json', docsDir), 'utf8')) as RunRecord;
  const load = os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(', ');
  const note = `${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, with ${rerunResults.map((r) => r.name).join(', ')}; load average then ${load} (1, 5, 15 min) on ${os.cpus().length} cores`;
  let results = [...record.results];
  for (const result of rerunResults) {
    const rerun = { ...result, rerun: note };
    results = results.some((r) => r.name === result.name)
      ? results.map((r) => (r.name === result.name ? rerun : r))
      : [...results, rerun];
  }
  writeBenchmarksPage(results, docsDir, { date: record.date, machine: record.machine });
}

/** Draws the page again from docs/benchmarks.json (after a change to how it is drawn). */
export function redrawBenchmarksPage(docsDir: URL): void {
  const record = JSON.parse(readFileSync(new URL('benchmarks.json', docsDir), 'utf8')) as RunRecord;
  writeBenchmarksPage(record.results, docsDir, { date: record.date, machine: record.machine });
}
