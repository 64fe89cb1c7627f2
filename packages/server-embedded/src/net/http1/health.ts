// etcd's health endpoints: /health (every version) and, from 3.5.11, /livez and /readyz with their
// named checks. The checks and their wording are etcd's (server/etcdserver/api/etcdhttp/health.go);
// the answers are etcd's too: 200 with a JSON body or "ok", else 503 with the reason.
import { errorAnswer, type HttpAnswer } from './answer.js';
import type { MemberView } from './member-view.js';

/** Counts of /health answers, exported by /metrics as etcd does. */
export class HealthCounts {
  success = 0;
  failures = 0;
}

/** The values of `name` in a query string, empty ones left out (etcd's getQuerySet). */
export function queryValues(query: string, name: string): string[] {
  return new URLSearchParams(query).getAll(name).filter((value) => value !== '');
}

/** /health: alarms not excluded, then the leader (unless serializable), then a read. */
export function healthAnswer(view: MemberView, query: string, counts: HealthCounts): HttpAnswer {
  const excluded = new Set(queryValues(query, 'exclude'));
  // 3.4 knows no serializable health check: it always wants a leader.
  const serializable =
    view.etcdVersion !== '3.4' && new URLSearchParams(query).get('serializable') === 'true';
  const reason = healthFault(view, excluded, serializable);
  const body =
    view.etcdVersion === '3.4'
      ? JSON.stringify({ health: String(reason === undefined) })
      : JSON.stringify({ health: String(reason === undefined), reason: reason ?? '' });
  if (reason !== undefined) {
    counts.failures++;
    return errorAnswer(503, body);
  }
  counts.success++;
  return { status: 200, headers: [], detectedType: 'text/plain; charset=utf-8', body };
}

function healthFault(
  view: MemberView,
  excluded: ReadonlySet<string>,
  serializable: boolean,
): string | undefined {
  const alarm = view.alarms().find((name) => !excluded.has(name));
  if (alarm !== undefined) {
    return alarm === 'NOSPACE' || alarm === 'CORRUPT' ? `ALARM ${alarm}` : 'ALARM UNKNOWN';
  }
  if (!serializable && !view.hasLeader()) return 'RAFT NO LEADER';
  const fault = view.readFault(serializable);
  return fault === undefined ? undefined : `RANGE ERROR:${fault}`;
}

/** A named check of /livez or /readyz: undefined when it passes, else why not. */
type Check = (view: MemberView) => string | undefined;

const serializableRead: Check = (view) => view.readFault(true);

/** The checks of each endpoint, in the order they are reported (etcd's order varies per call). */
const CHECKS: Readonly<Record<'livez' | 'readyz', ReadonlyMap<string, Check>>> = {
  livez: new Map([['serializable_read', serializableRead]]),
  readyz: new Map<string, Check>([
    [
      'data_corruption',
      (view) => (view.alarms().includes('CORRUPT') ? 'alarm activated: CORRUPT' : undefined),
    ],
    ['serializable_read', serializableRead],
    ['linearizable_read', (view) => view.readFault(false)],
    ['non_learner', (view) => (view.isLearner() ? 'not supported for learner' : undefined)],
  ]),
};

/** Whether `view`'s version serves /livez and /readyz (etcd 3.5.11 and later). */
export function hasProbeEndpoints(view: MemberView): boolean {
  return view.etcdVersion !== '3.4';
}

/**
 * /livez or /readyz (`check` undefined: every check but the excluded ones) or one check of it
 * (/readyz/linearizable_read); undefined when there is no such check.
 */
export function probeAnswer(
  view: MemberView,
  endpoint: 'livez' | 'readyz',
  check: string | undefined,
  query: string,
): HttpAnswer | undefined {
  const checks = CHECKS[endpoint];
  let names: string[];
  if (check === undefined) {
    // Excluding a check that does not exist is no error (etcd only logs it).
    const excluded = new Set(queryValues(query, 'exclude'));
    names = [...checks.keys()].filter((name) => !excluded.has(name));
  } else if (checks.has(check)) {
    names = [check];
  } else {
    return undefined;
  }
  let report = '';
  let failed = false;
  for (const name of names) {
    const fault = checks.get(name)!(view);
    if (fault === undefined) report += `[+]${name} ok\n`;
    else {
      failed = true;
      report += `[-]${name} failed: ${fault}\n`;
    }
  }
  // A failure always says why; success says so only when asked (?verbose).
  if (failed) return errorAnswer(503, report);
  const verbose = new URLSearchParams(query).has('verbose');
  return {
    status: 200,
    headers: [
      ['Content-Type', 'text/plain; charset=utf-8'],
      ['X-Content-Type-Options', 'nosniff'],
    ],
    body: `${verbose ? report : ''}ok\n`,
  };
}
