// Turns the suites' results into docs/benchmarks.md and the chart beside it (docs/benchmarks.svg),
// with the machine they ran on: the figures in the guides and READMEs are quoted from that page.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';

/** One row of a suite's table: column name to cell. */
export type Row = Record<string, string | number>;

/**
 * One bar of the chart: etcdkit's figure divided by the alternative's, measured in the same run.
 * Below 1 etcdkit costs less (or takes less time); `goal` marks the target the issue set, if any.
 */
export interface ChartBar {
  readonly label: string;
  readonly ratio: number;
  readonly goal?: number;
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
  /** When the suite was rerun alone (`--update`), after the rest of the page's run. */
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

/** A horizontal bar chart of ratios, with the line at 1 (level with the alternative) and goals. */
export function renderChart(bars: readonly ChartBar[]): string {
  const labelWidth = 480;
  const plotWidth = 420;
  const rowHeight = 22;
  const top = 30;
  const max = Math.max(
    1.5,
    ...bars.map((b) => Math.min(b.ratio, 4)),
    ...bars.map((b) => b.goal ?? 0),
  );
  const x = (value: number) => labelWidth + (Math.min(value, max) / max) * plotWidth;
  const height = top + bars.length * rowHeight + 30;
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${labelWidth + plotWidth + 70}" height="${height}" font-family="sans-serif" font-size="12">`,
    '<title>etcdkit against the alternatives, measured in the same run</title>',
    '<rect width="100%" height="100%" fill="white"/>',
    `<text x="10" y="18" font-weight="bold">etcdkit / the alternative, same run (lower is better; | = goal)</text>`,
  ];
  bars.forEach((bar, i) => {
    const y = top + i * rowHeight;
    const color = bar.goal !== undefined && bar.ratio > bar.goal ? '#d9822b' : '#2b7bd9';
    parts.push(
      `<text x="${labelWidth - 8}" y="${y + 14}" text-anchor="end">${escapeXml(bar.label)}</text>`,
      `<rect x="${labelWidth}" y="${y + 3}" width="${(x(bar.ratio) - labelWidth).toFixed(1)}" height="${rowHeight - 8}" fill="${color}"/>`,
      `<text x="${(x(bar.ratio) + 4).toFixed(1)}" y="${y + 14}">${bar.ratio.toFixed(2)}x</text>`,
    );
    if (bar.goal !== undefined) {
      const gx = x(bar.goal).toFixed(1);
      parts.push(
        `<line x1="${gx}" x2="${gx}" y1="${y + 1}" y2="${y + rowHeight - 3}" stroke="black" stroke-width="2"/>`,
      );
    }
  });
  const one = x(1).toFixed(1);
  parts.push(
    `<line x1="${one}" x2="${one}" y1="${top - 4}" y2="${height - 24}" stroke="#888" stroke-dasharray="4 3"/>`,
    `<text x="${one}" y="${height - 10}" text-anchor="middle" fill="#555">1x</text>`,
    '</svg>',
  );
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
    'Written by `npm run bench` (every suite, in one run; a suite rerun alone with `--update` says',
    'so under its heading); do not edit by hand. Each figure is',
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
      `${result.description} (${result.seconds.toFixed(0)} s${result.rerun ? `; rerun alone on ${result.rerun}` : ''}).`,
    );
    // How a suite measures, where it needs more than its description, is kept beside the bench.
    const method = new URL(`methods/${result.name}.md`, import.meta.url);
    if (existsSync(method)) lines.push('', readFileSync(method, 'utf8').trim());
    lines.push('', ...table(result.rows));
  }
  writeFileSync(new URL('benchmarks.md', docsDir), `${lines.join('\n')}\n`);
}

/**
 * Replaces one suite's results in docs/benchmarks.json with a run of that suite alone (marked with
 * when it ran) and draws the page again; the other suites keep their run.
 */
export function updateBenchmarksPage(result: SuiteResult, docsDir: URL): void {
  const record = JSON.parse(readFileSync(new URL('benchmarks.json', docsDir), 'utf8')) as RunRecord;
  const rerun = {
    ...result,
    rerun: `${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC`,
  };
  const results = record.results.some((r) => r.name === result.name)
    ? record.results.map((r) => (r.name === result.name ? rerun : r))
    : [...record.results, rerun];
  writeBenchmarksPage(results, docsDir, { date: record.date, machine: record.machine });
}

/** Draws the page again from docs/benchmarks.json (after a change to how it is drawn). */
export function redrawBenchmarksPage(docsDir: URL): void {
  const record = JSON.parse(readFileSync(new URL('benchmarks.json', docsDir), 'utf8')) as RunRecord;
  writeBenchmarksPage(record.results, docsDir, { date: record.date, machine: record.machine });
}
