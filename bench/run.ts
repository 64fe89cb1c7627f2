// `npm run bench`: runs every benchmark suite and prints each result beside its alternative.
// Benchmarks are never assertions: they report numbers for people to compare.
import { codecSuite } from './codec.js';
import { dataDirSuite } from './data-dir.js';
import { leaseMemorySuite } from './lease-memory.js';
import { transportSuite } from './transport.js';
import { waiterMemorySuite } from './waiter-memory.js';
import { watchMemorySuite } from './watch-memory.js';

const suites = [
  codecSuite,
  transportSuite,
  watchMemorySuite,
  leaseMemorySuite,
  waiterMemorySuite,
  dataDirSuite,
];
const only = process.argv[2];

for (const suite of suites) {
  if (only && suite.name !== only) continue;
  console.log(`\n## ${suite.name}: ${suite.description}\n`);
  // Suites that measure something other than speed print their own rows.
  if ('report' in suite) {
    console.table(await suite.report());
    continue;
  }
  const bench = await suite.run();
  console.table(
    bench.tasks.map((task) => {
      const result = task.result;
      const stats = result && 'throughput' in result ? result : undefined;
      return {
        task: task.name,
        'ops/s': stats ? Math.round(stats.throughput.mean).toLocaleString('en-US') : 'n/a',
        'mean (µs)': stats ? (stats.latency.mean * 1000).toFixed(2) : 'n/a',
        'p99 (µs)': stats ? ((stats.latency.p99 ?? 0) * 1000).toFixed(2) : 'n/a',
        samples: stats ? stats.latency.samplesCount : 0,
      };
    }),
  );
}
