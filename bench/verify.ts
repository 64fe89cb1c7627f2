// The cost of recording a history: the same register workload (8 clients of one Etcd client, each
// a loop of get, put and CAS on 3 keys with unique values, OPS operations in all) through
// RecordingRegister with a Recorder, and through RecordingRegister with a recorder that records
// nothing (the same client calls and answers, no invoke, no clock reads, no history). The embedded
// server runs in a child process (memory.ts' ServerProcess), so this process's CPU is the client's
// and the recorder's. Per measurement: ops/s (wall) and this process's CPU per operation
// (process.cpuUsage), after a full GC so no measurement pays for the garbage of the one before.
// The machine is shared and noisy, so each of ROUNDS rounds runs not recorded, recorded, recorded,
// not recorded (ABBA: a load that rises or falls through the round weighs on both alike) and its
// ratio is recorded / not recorded over the pair of each; rows give medians over the rounds, the
// ratio row the median round ratio with the middle half of the rounds' ratios beside it. A last
// row times the Recorder alone (invoke then ok, no I/O).
// ETCDKIT_BENCH_VERIFY_OPS sets the operations per measurement (default 4000),
// ETCDKIT_BENCH_VERIFY_ROUNDS the rounds (default 12; not ETCDKIT_BENCH_ROUNDS, which quick runs
// set low, and a ratio near 1 needs many rounds). Asserts nothing.
import { Etcd } from '../packages/client/src/index.js';
import type { RegisterInput, RegisterOutput } from '../packages/verify/src/models/register.js';
import { Recorder } from '../packages/verify/src/recorder.js';
import { RecordingRegister } from '../packages/verify/src/recording-register.js';
import { collector, ServerProcess } from './memory.js';
import { median, type Row } from './report.js';

const OPS = Number(process.env.ETCDKIT_BENCH_VERIFY_OPS ?? '4000') || 4000;
const ROUNDS = Number(process.env.ETCDKIT_BENCH_VERIFY_ROUNDS ?? '12') || 12;
const CLIENTS = 8;
const KEYS = 3;
const RECORDER_ALONE = 200_000;

/** A recorder that records nothing: RecordingRegister's calls without their history. */
class NotRecording extends Recorder<RegisterInput, RegisterOutput> {
  override run(
    _process: number,
    _input: RegisterInput,
    _effect: 'read' | 'write',
    action: () => Promise<RegisterOutput>,
  ): Promise<RegisterOutput> {
    return action();
  }
}

interface Measure {
  readonly opsPerSecond: number;
  readonly cpuMicrosPerOp: number;
}

let measured = 0;

async function measure(etcd: Etcd, recorder: Recorder<RegisterInput, RegisterOutput>) {
  const prefix = `bench/verify/${measured++}/`;
  let left = OPS;
  let unique = 0;
  const client = async (process: number) => {
    const register = new RecordingRegister(etcd, recorder, process);
    const last = new Map<string, string | undefined>();
    while (left-- > 0) {
      const key = `${prefix}${Math.floor(Math.random() * KEYS)}`;
      const dice = Math.random();
      if (dice < 0.5) last.set(key, (await register.get(key)).value);
      else if (dice < 0.75) await register.put(key, `v${unique++}`);
      else await register.cas(key, last.get(key), `v${unique++}`);
    }
  };
  const cpu = process.cpuUsage();
  const started = performance.now();
  await Promise.all(Array.from({ length: CLIENTS }, (_, i) => client(i)));
  const ms = performance.now() - started;
  const used = process.cpuUsage(cpu);
  await etcd.delete({ prefix });
  return { opsPerSecond: (OPS / ms) * 1000, cpuMicrosPerOp: (used.user + used.system) / OPS };
}

/** CPU per operation of invoke + ok alone, in µs. */
function recorderAlone(): number {
  const recorder = new Recorder<RegisterInput, RegisterOutput>();
  const input: RegisterInput = { type: 'get', key: 'k' };
  const output: RegisterOutput = { type: 'get', value: 'v', modRevision: 1n };
  const cpu = process.cpuUsage();
  for (let i = 0; i < RECORDER_ALONE; i++) recorder.invoke(i % CLIENTS, input).ok(output);
  const used = process.cpuUsage(cpu);
  return (used.user + used.system) / RECORDER_ALONE;
}

/**
 * CPU per operation of `run` around an action that answers at once, in µs: what RecordingRegister
 * pays per call with I/O taken away, so the noise of the network and of the machine is too.
 */
async function runAlone(recorder: Recorder<RegisterInput, RegisterOutput>): Promise<number> {
  const input: RegisterInput = { type: 'get', key: 'k' };
  const output: RegisterOutput = { type: 'get', value: 'v', modRevision: 1n };
  const answer = async () => output;
  const cpu = process.cpuUsage();
  for (let i = 0; i < RECORDER_ALONE; i++) await recorder.run(i % CLIENTS, input, 'read', answer);
  const used = process.cpuUsage(cpu);
  return (used.user + used.system) / RECORDER_ALONE;
}

/** The value at fraction `q` (0 to 1) of some numbers, interpolated. */
function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (sorted.length - 1) * q;
  const low = sorted[Math.floor(at)]!;
  return low + (sorted[Math.ceil(at)]! - low) * (at - Math.floor(at));
}

async function report(): Promise<Row[]> {
  const gc = collector();
  const server = await ServerProcess.start();
  const etcd = new Etcd({ endpoints: server.endpoints });
  const plain: Measure[] = [];
  const recorded: Measure[] = [];
  const run = async (recorder: Recorder<RegisterInput, RegisterOutput>) => {
    gc();
    return measure(etcd, recorder);
  };
  try {
    await run(new NotRecording()); // warm-up, not reported
    for (let round = 0; round < ROUNDS; round++) {
      const a1 = await run(new NotRecording());
      const b1 = await run(new Recorder<RegisterInput, RegisterOutput>());
      const b2 = await run(new Recorder<RegisterInput, RegisterOutput>());
      const a2 = await run(new NotRecording());
      plain.push(a1, a2);
      recorded.push(b1, b2);
    }
  } finally {
    await etcd.close();
    await server.stop();
  }
  const workload = `register, ${CLIENTS} clients, ${OPS} ops, ${ROUNDS} ABBA rounds`;
  const row = (variant: string, ms: readonly Measure[]): Row => ({
    workload,
    variant,
    'ops/s': Math.round(median(ms.map((m) => m.opsPerSecond))),
    'CPU µs/op': median(ms.map((m) => m.cpuMicrosPerOp)).toFixed(1),
  });
  // A round's ratio: its two recorded runs over its two not recorded ones, under the same load.
  const ratios = (of: (m: Measure) => number) => {
    const each = Array.from(
      { length: ROUNDS },
      (_, r) =>
        (of(recorded[2 * r]!) + of(recorded[2 * r + 1]!)) /
        (of(plain[2 * r]!) + of(plain[2 * r + 1]!)),
    );
    const x = (n: number) => `${n.toFixed(2)}x`;
    return `${x(median(each))} (${x(quantile(each, 0.25))}-${x(quantile(each, 0.75))})`;
  };
  return [
    row('not recorded', plain),
    row('recorded (Recorder)', recorded),
    {
      workload,
      variant: 'recorded / not recorded (middle half of the rounds)',
      'ops/s': ratios((m) => m.opsPerSecond),
      'CPU µs/op': ratios((m) => m.cpuMicrosPerOp),
    },
    {
      workload: `Recorder alone, ${RECORDER_ALONE} ops`,
      variant: 'invoke + ok',
      'ops/s': '',
      'CPU µs/op': recorderAlone().toFixed(2),
    },
    ...(await aloneRows()),
  ];
}

/** `run` with no I/O, recorded and not, alternated (ABBA) and a full GC before each: medians. */
async function aloneRows(): Promise<Row[]> {
  const gc = collector();
  const plain: number[] = [];
  const recorded: number[] = [];
  const timed = async (recorder: Recorder<RegisterInput, RegisterOutput>) => {
    gc();
    return runAlone(recorder);
  };
  await timed(new NotRecording()); // warm-up
  for (let round = 0; round < ROUNDS; round++) {
    plain.push(await timed(new NotRecording()));
    recorded.push(await timed(new Recorder<RegisterInput, RegisterOutput>()));
    recorded.push(await timed(new Recorder<RegisterInput, RegisterOutput>()));
    plain.push(await timed(new NotRecording()));
  }
  const workload = `run() answered at once, ${RECORDER_ALONE} ops`;
  return [
    { workload, variant: 'not recorded', 'ops/s': '', 'CPU µs/op': median(plain).toFixed(2) },
    { workload, variant: 'recorded', 'ops/s': '', 'CPU µs/op': median(recorded).toFixed(2) },
  ];
}

export const verifySuite = {
  name: 'verify',
  description:
    "the Recorder's overhead: one register workload on the embedded server (child process) with and without recording, ops/s and client CPU per op (medians of ABBA rounds, a full GC before each run)",
  report,
};
