#!/usr/bin/env node
// Entry point of the `etcdkit-server` bin: an etcd v3 server (in memory, or with --data-dir on disk),
// with etcd's flag names.
// Run from this repository's sources with
//   node --conditions=etcdkit-source --import tsx packages/server-embedded/src/cli/main.ts
import { openCommandInput } from './command-input.js';
import { runCli } from './run.js';

/** Resolves on the first SIGINT or SIGTERM; a second one falls back to Node's default (exit). */
function shutdownSignal(): Promise<string> {
  return new Promise((resolve) => {
    const onSignal = (signal: NodeJS.Signals): void => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      resolve(signal);
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  });
}

const exitCode = await runCli(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  env: process.env,
  shutdownSignal: shutdownSignal(),
  openCommandInput,
});
process.exitCode = exitCode;
// The server has closed everything it opened; a handle left behind by a library must not keep the
// process alive after a clean stop, so exit anyway a moment later.
setTimeout(() => process.exit(exitCode), 1_000).unref();
