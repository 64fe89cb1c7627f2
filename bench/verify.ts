// The cost of recording a history: the same register workload (8 clients of one Etcd client, each
// a loop of get, put and CAS on 3 keys with unique values, OPS operations in all) through
// RecordingRegister with a Recorder, and through RecordingRegister with a recorder that records
// nothing (the same client calls and answers, no invoke, no clock reads, no history). The embedded
// server runs in a child process (memory.ts' ServerProcess), so this process's CPU is the client's
// and the recorder's. Per measurement: ops/s (wall) and this process's CPU per operation
// (process.cpuUsage). ROUNDS rounds, the two variants' order alternated; rows give medians, and
// the ratio row the median of each round's recorded / not recorded ratio. A last row times the
// Recorder alone (invoke then ok, no I/O).
// ETCDKIT_BENCH_VERIFY_OPS sets the operations per measurement (default 4000). Asserts nothing.
import { Etcd } from '../packages/client/src/index.js';
import type { RegisterInput, RegisterOutput } from '../packages/verify/src/models/register.js';
import { Recorder } from '../packages/verify/src/recorder.js';
import { RecordingRegister } from '../packages/verify/src/recording-register.js';
import { ServerProcess } from './memory.js';
import { median, type Row } from './report.js';

const OPS = Number(process.env.ETCDKIT_BENCH_VERIFY_OPS ?? '4000') || 4000;
const ROUNDS = 7;
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

let run = 0;

async function measure(etcd: Etcd, recorder: Recorder<RegisterInput, RegisterOutput>) {
  const prefix = `bench/verify/${run++}/`;
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

async function report(): Promise<Row[]> {
  const server = await ServerProcess.start();
  const etcd = new Etcd({ endpoints: server.endpoints });
  const variants = [
    { name: 'not recorded', recorder: () => new NotRecording() },
    { name: 'recorded (Recorder)', recorder: () => new Recorder<RegisterInput, RegisterOutput>() },
  ];
  const results = new Map<string, Measure[]>(variants.map((v) => [v.name, []]));
  try {
    await measure(etcd, new NotRecording()); // warm-up, not reported
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? variants : [...variants].reverse();
      for (const variant of order)
        results.get(variant.name)!.push(await measure(etcd, variant.recorder()));
    }
  } finally {
    await etcd.close();
    await server.stop();
  }
  const of = (name: string) => {
    const ms = results.get(name)!;
    return {
      opsPerSecond: median(ms.map((m) => m.opsPerSecond)),
      cpu: median(ms.map((m) => m.cpuMicrosPerOp)),
    };
  };
  // Each round's pair ran back to back, under the same load: the ratio is taken per round.
  const pairs = (measure: (m: Measure) => number) => {
    const plain = results.get(variants[0]!.name)!;
    const recorded = results.get(variants[1]!.name)!;
    return `${median(recorded.map((m, i) => measure(m) / measure(plain[i]!))).toFixed(2)}x`;
  };
  const rows: Row[] = variants.map(({ name }) => ({
    workload: `register, ${CLIENTS} clients, ${OPS} ops`,
    variant: name,
    'ops/s': Math.round(of(name).opsPerSecond),
    'CPU µs/op': of(name).cpu.toFixed(1),
  }));
  rows.push({
    workload: `register, ${CLIENTS} clients, ${OPS} ops`,
    variant: 'recorded / not recorded',
    'ops/s': pairs((m) => m.opsPerSecond),
    'CPU µs/op': pairs((m) => m.cpuMicrosPerOp),
  });
  rows.push({
    workload: `Recorder alone, ${RECORDER_ALONE} ops`,
    variant: 'invoke + ok',
    'ops/s': '',
    'CPU µs/op': recorderAlone().toFixed(2),
  });
  return rows;
}

export const verifySuite = {
  name: 'verify',
  description:
    "the Recorder's overhead: one register workload on the embedded server (child process) with and without recording, ops/s and client CPU per op (medians of 7 alternated rounds)",
  report,
};
