#!/usr/bin/env node
// Entry point of the `etcdkit-verify` bin. From this repository's sources:
//   node --conditions=etcdkit-source --import tsx packages/verify/src/cli/main.ts --workload register
import { runCli } from './run.js';

process.exitCode = await runCli(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
});
