// etcdkit-verify: parse, verify, print, write the report; the exit code says the verdict.
import { writeFile } from 'node:fs/promises';
import { EtcdError } from '@etcdkit/client';
import { historyToJson, toJsonValue } from '../history.js';
import { renderReport } from '../report/html.js';
import { type VerifyResult, verify } from '../verify.js';
import { parseCli, USAGE, UsageError } from './args.js';

/** Where the CLI writes. */
export interface CliOutput {
  stdout(text: string): void;
  stderr(text: string): void;
}

/** Exit codes of `etcdkit-verify`. */
export const EXIT = { valid: 0, invalid: 1, unknown: 2, usage: 64, failed: 70 } as const;

/** The JSON summary: the last line of `--json` output. */
export function summaryJson(result: VerifyResult): Record<string, unknown> {
  return {
    valid: result.valid,
    workload: result.workload,
    target: result.target,
    ops: result.ops,
    outcomes: result.outcomes,
    anomalies: result.anomalies.map((a) => ({
      model: a.model,
      kind: a.kind,
      explanation: a.explanation,
      minimal: a.minimal,
      timeline: a.timeline,
      ops: historyToJson(a.ops),
    })),
    faults: result.faults,
    check: toJsonValue(result.check),
    runMs: Math.round(result.runMs),
  };
}

/** Runs the CLI on `argv`; resolves with the exit code. */
export async function runCli(argv: readonly string[], out: CliOutput): Promise<number> {
  let request: ReturnType<typeof parseCli>;
  try {
    request = parseCli(argv);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    out.stderr(`etcdkit-verify: ${error.message}\n\n${USAGE}`);
    return EXIT.usage;
  }
  if (request === undefined) {
    out.stdout(USAGE);
    return EXIT.valid;
  }
  let result: VerifyResult;
  try {
    result = await verify(request.options);
  } catch (error) {
    // A typed error is a known state with its own message; anything else is a bug: its stack.
    const text =
      error instanceof EtcdError
        ? `${error.name}: ${error.message}`
        : error instanceof Error
          ? (error.stack ?? error.message)
          : String(error);
    out.stderr(`etcdkit-verify: ${text}\n`);
    return EXIT.failed;
  }
  out.stdout(
    `${result.workload} on ${result.target}: ${result.ops} operations (${result.outcomes.ok} ok, ${result.outcomes.fail} failed, ${result.outcomes.unknown} unknown), ${result.faults.length} faults\n`,
  );
  out.stdout(`valid: ${result.valid} (checked in ${Math.round(result.check.elapsedMs)} ms)\n`);
  for (const anomaly of result.anomalies) {
    out.stdout(
      `\n${anomaly.model} ${anomaly.kind}${anomaly.minimal ? ' (minimal)' : ''}: ${anomaly.explanation}\n`,
    );
    for (const line of anomaly.timeline) out.stdout(`  ${line}\n`);
  }
  if (request.report !== undefined) {
    await writeFile(request.report, renderReport(result));
    out.stdout(`report: ${request.report}\n`);
  }
  if (request.historyFile !== undefined) {
    await writeFile(request.historyFile, `${JSON.stringify(historyToJson(result.history))}\n`);
    out.stdout(`history: ${request.historyFile}\n`);
  }
  if (request.json) out.stdout(`${JSON.stringify(summaryJson(result))}\n`);
  return result.valid === true ? EXIT.valid : result.valid === false ? EXIT.invalid : EXIT.unknown;
}
