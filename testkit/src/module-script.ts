// A module script run in a fresh Node process (tsx loads TypeScript), for what only a process of its
// own shows: which modules an import loads, what happens at exit.
import { execFile } from 'node:child_process';

/** Options of {@link runModuleScript}. */
export interface ModuleScriptOptions {
  /** Resolve `@etcdkit/*` packages to their TypeScript sources (`--conditions=etcdkit-source`). */
  readonly sources?: boolean;
  /** Environment variables added to this process's. */
  readonly env?: Record<string, string>;
  /** Kills the process after this long; default 20 s. */
  readonly timeoutMs?: number;
}

/** Runs `script` as an ES module in a new Node process; resolves with its stdout, rejects on failure. */
export function runModuleScript(
  script: string,
  options: ModuleScriptOptions = {},
): Promise<string> {
  const args = ['--import', 'tsx', '--input-type=module', '-e', script];
  if (options.sources) args.unshift('--conditions=etcdkit-source');
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      args,
      { env: { ...process.env, ...options.env }, timeout: options.timeoutMs ?? 20_000 },
      (error, stdout, stderr) =>
        error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(stdout),
    );
  });
}
