#!/usr/bin/env node
// The etcdkit bin. Present before any build so that `npm install` links it in the repository too.
// From the registry (the package has no src/) it loads dist/cli.js in this process. In the
// repository it runs src/cli/main.ts under tsx with the etcdkit-source condition, in a child
// process that this one waits for, passing it the signals a service manager sends.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { constants } from 'node:os';
import { fileURLToPath } from 'node:url';

const main = new URL('../src/cli/main.ts', import.meta.url);
if (existsSync(main)) {
  const args = ['--conditions=etcdkit-source', '--import', import.meta.resolve('tsx')];
  const cli = spawn(process.execPath, [...args, fileURLToPath(main), ...process.argv.slice(2)], {
    stdio: 'inherit',
  });
  const forward = (signal) => cli.kill(signal);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, forward);
  cli.on('exit', (code, signal) => {
    process.exitCode = code ?? 128 + (constants.signals[signal] ?? 0);
  });
} else {
  await import(new URL('../dist/cli.js', import.meta.url).href);
}
