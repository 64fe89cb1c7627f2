// `npm run bench`: runs every benchmark suite and prints each result beside its alternative; a run
// of every suite also writes docs/benchmarks.{md,svg,json}. `npm run bench <suite> [<suite>...]`
// runs those suites, one after the other in one run (`--update` also puts their results in place
// of theirs on the page, with the load they ran under);
// `npm run bench -- --redraw` draws the page again from docs/benchmarks.json.
// Benchmarks are never assertions: they report numbers for people to compare.
import type { Bench } from 'tinybench';
import { codecSuite } from './codec.js';
import { dataDirSuite } from './data-dir.js';
import { leaseMemorySuite } from './lease-memory.js';
import { recipesSuite } from './recipes.js';
import {
  normalize,
  type Row,
  redrawBenchmarksPage,
  type SuiteReport,
  type SuiteResult,
  updateBenchmarksPage,
  writeBenchmarksPage,
} from './report.js';
import { serverCpuSuite } from './server-cpu.js';
import { serverMemorySuite } from './server-memory.js';
import { serverMvccSuite } from './server-mvcc.js';
import { stmSuite } from './stm.js';
import { transportSuite } from './transport.js';
import { transportCpuSuite } from './transport-cpu.js';
import { verifySuite } from './verify.js';
import { waiterMemorySuite } from './waiter-memory.js';
import { watchMemorySuite } from './watch-memory.js';

/** A suite either prints its own rows (report) or is a tinybench run. */
type Suite = { readonly name: string; readonly description: string } & (
  | { report(): Promise<SuiteReport> }
  | { run(): Promise<Bench> }
);

const suites: Suite[] = [
  codecSuite,
  transportSuite,
  transportCpuSuite,
  watchMemorySuite,
  leaseMemorySuite,
  waiterMemorySuite,
  dataDirSuite,
  stmSuite,
  recipesSuite,
  serverCpuSuite,
  serverMemorySuite,
  serverMvccSuite,
  verifySuite,
];
const only = process.argv.slice(2).filter((arg) => !arg.startsWith('--'));
if (process.argv.includes('--redraw')) {
  redrawBenchmarksPage(new URL('../docs/', import.meta.url));
  console.log('drew docs/benchmarks.md and docs/benchmarks.svg again from docs/benchmarks.json');
  process.exit(0);
}
const unknown = only.filter((name) => !suites.some((suite) => suite.name === name));
if (unknown.length > 0) {
  console.error(
    `no suite named ${unknown.join(', ')}; the suites: ${suites.map((s) => s.name).join(', ')}`,
  );
  process.exit(2);
}

function benchRows(bench: Bench): Row[] {
  return bench.tasks.map((task) => {
    const result = task.result;
    const stats = result && 'throughput' in result ? result : undefined;
    return {
      task: task.name,
      'ops/s': stats ? Math.round(stats.throughput.mean).toLocaleString('en-US') : 'n/a',
      'mean (µs)': stats ? (stats.latency.mean * 1000).toFixed(2) : 'n/a',
      'p99 (µs)': stats ? ((stats.latency.p99 ?? 0) * 1000).toFixed(2) : 'n/a',
      samples: stats ? stats.latency.samplesCount : 0,
    };
  });
}

const results: SuiteResult[] = [];
for (const suite of suites) {
  if (only.length > 0 && !only.includes(suite.name)) continue;
  console.log(`\n## ${suite.name}: ${suite.description}\n`);
  const started = performance.now();
  const { rows, chart } =
    'report' in suite
      ? normalize(await suite.report())
      : { rows: benchRows(await suite.run()), chart: [] };
  console.table(rows);
  results.push({
    name: suite.name,
    description: suite.description,
    rows,
    chart,
    seconds: (performance.now() - started) / 1000,
  });
}
if (only.length === 0) {
  writeBenchmarksPage(results, new URL('../docs/', import.meta.url));
  console.log('\nwrote docs/benchmarks.md and docs/benchmarks.svg');
} else if (process.argv.includes('--update')) {
  updateBenchmarksPage(results, new URL('../docs/', import.meta.url));
  console.log(`\nreplaced ${only.join(', ')} in docs/benchmarks.json and drew the page again`);
}
