// /metrics: the etcd metrics that mean something for this server, under etcd's names and types,
// in Prometheus' text format (version 0.0.4). Families are listed by name, as Prometheus' Go
// client lists them; numbers are written as Go writes a float64 (1e+06 and above in exponent form).
import type { HttpAnswer } from './answer.js';
import type { HealthCounts } from './health.js';
import type { MemberView } from './member-view.js';

type MetricType = 'gauge' | 'counter';

interface Family {
  readonly name: string;
  readonly type: MetricType;
  readonly help: string;
  readonly label?: readonly [string, string];
  readonly value: number;
}

/** A number as Go's strconv.FormatFloat(v, 'g', -1, 64) writes it, which Prometheus' client uses. */
export function goFloat(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (!Number.isFinite(value)) return value > 0 ? '+Inf' : '-Inf';
  if (value === 0) return '0';
  const magnitude = Math.abs(value);
  if (magnitude >= 1e-4 && magnitude < 1e6) return String(value);
  const [mantissa, power] = value.toExponential().split('e') as [string, string];
  const sign = power.startsWith('-') ? '-' : '+';
  const digits = power.replace(/^[+-]/, '');
  return `${mantissa}e${sign}${digits.padStart(2, '0')}`;
}

function families(view: MemberView, health: HealthCounts): Family[] {
  const figures = view.figures();
  const line = view.etcdVersion;
  const bool = (value: boolean): number => (value ? 1 : 0);
  const list: Family[] = [
    {
      name: 'etcd_cluster_version',
      type: 'gauge',
      help: 'The cluster version, as a label; always 1.',
      label: ['cluster_version', line],
      value: 1,
    },
    {
      name: 'etcd_debugging_mvcc_compact_revision',
      type: 'gauge',
      help: 'The revision the store was last compacted at (-1: never).',
      value: figures.compactRevision > 0 ? figures.compactRevision : -1,
    },
    {
      name: 'etcd_debugging_mvcc_current_revision',
      type: 'gauge',
      help: "The store's current revision.",
      value: figures.revision,
    },
    {
      name: 'etcd_debugging_mvcc_keys_total',
      type: 'gauge',
      help: 'Keys in the store.',
      value: figures.keys,
    },
    {
      name: 'etcd_mvcc_db_total_size_in_bytes',
      type: 'gauge',
      help: "The backend's size, as Status reports it.",
      value: figures.dbSize,
    },
    {
      name: 'etcd_mvcc_db_total_size_in_use_in_bytes',
      type: 'gauge',
      help: "The part of the backend's size in use.",
      value: figures.dbSizeInUse,
    },
    {
      name: 'etcd_server_has_leader',
      type: 'gauge',
      help: 'Whether the member knows a leader (1) or not (0).',
      value: bool(view.hasLeader()),
    },
    {
      name: 'etcd_server_health_failures',
      type: 'counter',
      help: '/health requests answered unhealthy.',
      value: health.failures,
    },
    {
      name: 'etcd_server_health_success',
      type: 'counter',
      help: '/health requests answered healthy.',
      value: health.success,
    },
    {
      name: 'etcd_server_id',
      type: 'gauge',
      help: "The member's id in hexadecimal, as a label; always 1.",
      label: ['server_id', view.memberId.toString(16)],
      value: 1,
    },
    {
      name: 'etcd_server_is_leader',
      type: 'gauge',
      help: 'Whether the member leads the cluster (1) or not (0).',
      value: bool(view.isLeader()),
    },
    {
      name: 'etcd_server_is_learner',
      type: 'gauge',
      help: 'Whether the member is a learner (1) or not (0).',
      value: bool(view.isLearner()),
    },
    {
      name: 'etcd_server_leader_changes_seen_total',
      type: 'counter',
      help: 'Leader changes the member has seen.',
      value: view.leaderChanges(),
    },
    {
      name: 'etcd_server_proposals_applied_total',
      type: 'gauge',
      help: 'Raft entries applied.',
      value: figures.appliedIndex,
    },
    {
      name: 'etcd_server_proposals_committed_total',
      type: 'gauge',
      help: 'Raft entries committed.',
      value: figures.appliedIndex,
    },
    {
      name: 'etcd_server_quota_backend_bytes',
      type: 'gauge',
      help: 'The backend quota in bytes.',
      value: figures.quotaBackendBytes,
    },
    {
      name: 'etcd_server_version',
      type: 'gauge',
      help: 'The server version, as a label; always 1.',
      label: ['server_version', view.serverVersion],
      value: 1,
    },
  ];
  if (line === '3.4') {
    // 3.4 still exports the backend size under its old debugging name too.
    list.push({
      name: 'etcd_debugging_mvcc_db_total_size_in_bytes',
      type: 'gauge',
      help: "The backend's size (3.4's older name).",
      value: figures.dbSize,
    });
  }
  return list.sort((a, b) => (a.name < b.name ? -1 : 1));
}

/** The /metrics text. */
export function metricsText(view: MemberView, health: HealthCounts): string {
  let text = '';
  for (const family of families(view, health)) {
    const label =
      family.label === undefined ? '' : `{${family.label[0]}=${JSON.stringify(family.label[1])}}`;
    text += `# HELP ${family.name} ${family.help}\n# TYPE ${family.name} ${family.type}\n`;
    text += `${family.name}${label} ${goFloat(family.value)}\n`;
  }
  return text;
}

/** /metrics answers any method, as Prometheus' handler does. */
export function metricsAnswer(view: MemberView, health: HealthCounts): HttpAnswer {
  // Prometheus' Go client from etcd 3.5.2x on names its escaping scheme in the content type.
  const escaping = view.etcdVersion === '3.4' ? '' : '; escaping=underscores';
  return {
    status: 200,
    headers: [['Content-Type', `text/plain; version=0.0.4; charset=utf-8${escaping}`]],
    body: metricsText(view, health),
  };
}
