// The API site's categories: which category each export of the packages' index.ts files is listed
// under. One table for the whole site; the typedoc plugin (./plugin.mjs) applies it and fails the
// build on an export it does not map, and docs/samples/api-categories.test.ts checks it covers
// every export, so a new module or export needs a line here.
//
// A rule is `<package>:<path under src>`: a directory ends with `/`, a single export is
// `<file>#<name>`, `<package>:` is the whole package (a new package: one rule, or one per file). The most specific rule wins (an export, then a file, then the longest
// directory). Every class that extends Error is listed under Errors whatever its file.
import { relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The category of every error class, and of the rules' error helpers. */
export const ERRORS = 'Errors';

/** The categories in the order the site lists them, each with its one-line description. */
export const CATEGORIES = [
  {
    title: 'Client',
    description: 'The client, its connection and transports, and the byte helpers.',
    rules: [
      'client:etcd.ts',
      'client:connection/',
      'client:transport/',
      'client:bytes.ts',
      'client:header.ts',
    ],
  },
  {
    title: 'KV and txn',
    description: 'Reading, writing, deleting and scanning keys; transactions and their operations.',
    rules: ['client:kv/', 'client:keys/', 'client:key-value.ts', 'client:json.ts'],
  },
  {
    title: 'Watch',
    description: 'Watching keys: watchers, their events and options, and the informer.',
    rules: ['client:watch/', 'client:kv/informer.ts'],
  },
  {
    title: 'Lease',
    description: 'Granting, keeping alive and revoking leases, and learning of their loss.',
    rules: ['client:lease/', 'client:validate.ts#LeaseRef'],
  },
  {
    title: 'Cluster and maintenance',
    description: 'Membership, endpoint discovery, status, alarms, defragmentation and snapshots.',
    rules: ['client:cluster/'],
  },
  {
    title: 'Auth',
    description: 'Users, roles and permissions: enabling and administering etcd authentication.',
    rules: ['client:cluster/auth.ts'],
  },
  {
    title: 'Election and lock',
    description: "The clients of etcd's Election and Lock services (the recipes build on the KV).",
    rules: ['client:election/'],
  },
  {
    title: 'Sessions',
    description: 'A lease kept alive for the recipes, and one that survives the loss of its lease.',
    rules: ['recipes:session/'],
  },
  {
    title: 'Locks and fencing',
    description: 'Mutexes, read/write locks, semaphores, and writes fenced by a held lock.',
    rules: ['recipes:lock/'],
  },
  {
    title: 'Elections',
    description: 'Leader election: campaign, lead, proclaim, resign, observe.',
    rules: ['recipes:election/'],
  },
  {
    title: 'STM',
    description:
      'Software transactional memory over etcd transactions, at four isolation levels, and a shared counter.',
    rules: ['recipes:stm/', 'recipes:counter/'],
  },
  {
    title: 'Barriers and queues',
    description:
      'Barriers, double barriers, FIFO, priority and delay queues, and a work queue with at-least-once delivery.',
    rules: ['recipes:barrier/', 'recipes:queue/'],
  },
  {
    title: 'Service discovery',
    description:
      'Registering service instances and discovering the live set; group membership with a live view.',
    rules: ['recipes:discovery/'],
  },
  {
    title: 'Recipe building blocks',
    description:
      'Waiting for keys to go, for the next event, and for predecessors: the waits the recipes are built on.',
    rules: ['recipes:wait.ts', 'recipes:line/'],
  },
  {
    title: 'Embedded server',
    description: 'The in-process etcd server, its simulated cluster, options and logging.',
    rules: [
      'server-embedded:embedded-etcd.ts',
      'server-embedded:etcd-version.ts',
      'server-embedded:cluster/',
      'server-embedded:net/',
      'server-embedded:consensus/',
      'server-embedded:member/',
      'server-embedded:logger.ts',
      'server-embedded:maintenance/auto-compaction.ts',
      'server-embedded:auth/',
    ],
  },
  {
    title: 'Testing',
    description: 'Fault injection and virtual time for tests against the embedded server.',
    rules: [
      'server-embedded:faults/',
      'server-embedded:virtual-clock.ts',
      'server-embedded:clock.ts',
    ],
  },
  {
    title: 'Server internals',
    description: "The embedded server's store, leases, watches and persistence, for extending it.",
    rules: [
      'server-embedded:mvcc/',
      'server-embedded:lease/',
      'server-embedded:watch/',
      'server-embedded:persistence/',
      'server-embedded:maintenance/',
    ],
  },
  {
    title: 'Telemetry',
    description: 'OpenTelemetry spans and metrics of the client, and the names they use.',
    rules: ['otel:'],
  },
  {
    title: 'Verification',
    description: 'Recording histories, checking them for linearizability, workloads and faults.',
    rules: ['verify:'],
  },
  {
    title: 'Command line',
    description:
      'The etcdkit command (lock, elect, semaphore) run from a program, and its exit statuses.',
    rules: ['cli:'],
  },
  {
    title: ERRORS,
    description: 'Every error class, and when it is thrown.',
    rules: [
      'client:errors.ts',
      'client:error-table.ts',
      'recipes:errors.ts',
      'recipes:stm/errors.ts',
      'server-embedded:errors.ts',
    ],
  },
];

/**
 * Where a declaration is, as the rules name it: `client:watch/types.ts`, or undefined outside
 * packages/<package>/src.
 */
export function ruleLocation(fileName) {
  const path = relative(ROOT, fileName).split(sep).join('/');
  const match = /^packages\/([^/]+)\/src\/(.+)$/.exec(path);
  return match ? `${match[1]}:${match[2]}` : undefined;
}

/**
 * The category of an export (`location` from ruleLocation, its exported `name`, and whether it
 * is a class extending Error), or undefined when no rule maps it.
 */
export function categoryOf({ location, name, isError }) {
  if (isError) return ERRORS;
  let best;
  for (const category of CATEGORIES) {
    for (const rule of category.rules) {
      const weight = ruleWeight(rule, location, name);
      if (weight > (best?.weight ?? 0)) best = { weight, title: category.title };
    }
  }
  return best?.title;
}

function ruleWeight(rule, location, name) {
  if (rule.includes('#')) return rule === `${location}#${name}` ? Number.MAX_SAFE_INTEGER : 0;
  if (rule === location) return Number.MAX_SAFE_INTEGER - 1;
  // A prefix: a directory (`server-embedded:mvcc/`) or a family of files (`service-registry-`).
  if (!rule.endsWith('.ts') && location.startsWith(rule)) return rule.length;
  return 0;
}

/** Whether a TypeScript symbol is a class whose chain of base classes reaches Error. */
export function isErrorClass(ts, checker, symbol) {
  if (!(symbol.flags & ts.SymbolFlags.Class)) return false;
  const seen = new Set();
  let type = checker.getDeclaredTypeOfSymbol(symbol);
  while (type && !seen.has(type)) {
    seen.add(type);
    if (type.symbol?.name === 'Error') return true;
    type = checker.getBaseTypes(type)[0];
  }
  return false;
}

/** What categoryOf needs to know of an exported symbol (an alias is followed to its target). */
export function describeExport(ts, checker, exported) {
  const symbol =
    exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
  const declaration = symbol.declarations?.[0];
  const fileName = declaration?.getSourceFile().fileName;
  return {
    name: exported.name,
    location: fileName === undefined ? undefined : ruleLocation(fileName),
    isError: isErrorClass(ts, checker, symbol),
  };
}
