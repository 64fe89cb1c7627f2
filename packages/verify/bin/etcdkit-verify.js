#!/usr/bin/env node
// The etcdkit-verify bin. This file exists before any build, so `npm install` links it in the
// repository too. Installed from the registry (no src/ in the package) it runs the build,
// dist/cli.js; in the repository it runs the TypeScript sources through tsx, so it is never a
// stale build. (The same shim as @etcdkit/server-embedded's etcdkit-server bin.)
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const source = new URL('../src/cli/main.ts', import.meta.url);
if (!existsSync(source)) {
  await import(new URL('../dist/cli.js', import.meta.url).href);
} else {
  const child = spawn(
    process.execPath,
    [
      '--conditions=etcdkit-source',
      '--import',
      import.meta.resolve('tsx'),
      fileURLToPath(source),
      ...process.argv.slice(2),
    ],
    { stdio: 'inherit' },
  );
  // A terminal's Ctrl-C reaches both processes; a signal sent to this one is passed on.
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.on(signal, () => child.kill(signal));
  }
  child.on('exit', (code, signal) => {
    if (signal !== null) {
      process.removeAllListeners(signal);
      process.kill(process.pid, signal);
    } else {
      process.exitCode = code ?? 1;
    }
  });
}
