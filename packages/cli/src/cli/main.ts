#!/usr/bin/env node
// Entry point of the `etcdkit` bin. From this repository's sources:
//   node --conditions=etcdkit-source --import tsx packages/cli/src/cli/main.ts lock NAME -- CMD
import { runEtcdkit } from '../run.js';

const status = await runEtcdkit(process.argv.slice(2));
process.exitCode = status;
// Everything opened was closed; a handle a library left behind must not hold the exit back.
setTimeout(() => process.exit(status), 1_000).unref();
