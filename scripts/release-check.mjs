// The release check: what a user gets from the registry, tried as a user would. It packs each
// package (npm pack, so the prepack manifest rewrite runs), checks the tarballs' contents, lints
// them with publint and @arethetypeswrong/cli, installs them into a fresh temporary project (their
// dependencies come from the npm registry) and there:
//   - compiles release-check/program.ts with tsc (strict, nodenext, skipLibCheck false) as an ES
//     module (program.ts: import) and as CommonJS (program.cts: require), and runs both: a lock, an
//     STM transfer, an election, a watch and a lease on the embedded server, and a register history
//     checked by @etcdkit/verify,
//   - runs `npx etcdkit-server` and talks to it with etcdctl, then `npx etcdkit lock` runs a command
//     holding a lock there,
//   - runs `npx etcdkit-verify` on the embedded server (register, and a fenced lock under the
//     lease-expiry fault: its worker processes), and on real etcd processes it starts itself
//     (`--etcd-binary`, one member under kill -9 and a 3-member cluster under pauses), when an
//     etcd binary is there (ETCDKIT_ETCD_BIN, else /usr/bin/etcd), leaving none running.
//   - runs both programs again against each real etcd it starts itself (ETCDKIT_ETCD_BINS, a
//     comma-separated list of binaries, else the one etcd binary above),
//   - on every other runtime given (`--runtime NAME=BINARY`: Node of another major, Bun, Deno):
//     both programs on the embedded server and on each real etcd, `etcdkit-server` (with etcdctl)
//     and `etcdkit lock` run by that runtime.
// Exit code 0 when everything holds; otherwise the first failure, and exit code 1. The last line
// names the runtimes every check passed on.
//
//   node scripts/release-check.mjs [--skip-build] [--keep] [--runtime NAME=BINARY]...
//     --skip-build  use the packages' dist/ as built (CI builds them in `npm run check` before)
//     --keep        leave the temporary project in place and print its path
//     --runtime     also run the consumer programs and bins with BINARY (a node, bun or deno
//                   binary; deno's runs as `deno run -A`); NAME labels it in the output
import { spawn } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SOURCE_CONDITION } from './pack-manifest.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const PROGRAMS = fileURLToPath(new URL('./release-check/', import.meta.url));
const PACKAGES = ['client', 'recipes', 'otel', 'server-embedded', 'verify', 'cli'];
const USAGE = 'usage: release-check.mjs [--skip-build] [--keep] [--runtime NAME=BINARY]...';
const args = new Set();
/** The other runtimes to run the programs with: `{ name, command }`, command = binary and its flags. */
const runtimes = [];
for (let i = 2; i < process.argv.length; i++) {
  const arg = process.argv[i];
  if (arg === '--skip-build' || arg === '--keep') args.add(arg);
  else if (arg === '--runtime' && /^[^=]+=.+/.test(process.argv[i + 1] ?? '')) {
    const [name, binary] = process.argv[++i].split(/=(.*)/s);
    // Deno runs a file with `deno run`; -A: the programs start servers and processes.
    const command = /(^|\/)deno$/.test(binary) ? [binary, 'run', '-A'] : [binary];
    runtimes.push({ name, command });
  } else {
    console.error(`release-check: bad argument ${arg}\n${USAGE}`);
    process.exit(2);
  }
}

class CheckFailed extends Error {}

/**
 * Runs a command; resolves with its output, rejects with it when the exit code is not 0 (unless
 * `options.anyExitCode`: then resolves with the exit code too).
 */
function run(command, commandArgs, options = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, commandArgs, {
      cwd: options.cwd ?? ROOT,
      env: { ...process.env, ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    child.on('error', reject);
    child.on('close', (code) => {
      if (code === 0 || options.anyExitCode) resolve({ code, stdout, stderr });
      else {
        reject(
          new CheckFailed(
            `${command} ${commandArgs.join(' ')} exited with ${code}\n${stdout}${stderr}`.trimEnd(),
          ),
        );
      }
    });
  });
}

function step(title) {
  console.log(`release-check: ${title}`);
}

function check(condition, message) {
  if (!condition) throw new CheckFailed(message);
}

/** A TCP port of 127.0.0.1 that was free a moment ago. */
function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** Packs a package; checks what the tarball holds; returns its path. */
async function pack(name, destination) {
  const dir = join(ROOT, 'packages', name);
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', destination], {
    cwd: dir,
  });
  const [report] = JSON.parse(stdout);
  const files = report.files.map((file) => file.path);
  const unwanted = files.filter((path) => path.endsWith('.map') || path.startsWith('src/'));
  check(unwanted.length === 0, `${report.name}: the tarball holds ${unwanted.join(', ')}`);
  const tarball = join(destination, report.filename);
  const { stdout: manifest } = await run('tar', ['-xOzf', tarball, 'package/package.json']);
  check(
    !manifest.includes(SOURCE_CONDITION),
    `${report.name}: the packed package.json still has the ${SOURCE_CONDITION} condition`,
  );
  const repository = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  for (const field of ['description', 'keywords', 'homepage', 'bugs', 'repository', 'license']) {
    check(repository[field] !== undefined, `${report.name}: package.json has no ${field}`);
  }
  console.log(
    `  ${report.filename}: ${files.length} files, ${kib(report.size)} packed, ${kib(report.unpackedSize)} unpacked`,
  );
  return tarball;
}

function kib(bytes) {
  return `${(bytes / 1024).toFixed(0)} KiB`;
}

/** publint and attw on a tarball: any message at all (suggestions included) fails. */
async function lint(tarball) {
  const bin = (name) => join(ROOT, 'node_modules', '.bin', name);
  const publint = await run(bin('publint'), ['run', tarball, '--strict', '--level', 'suggestion']);
  const said = `${publint.stdout}${publint.stderr}`;
  check(/All good!/.test(said), `publint ${tarball}:\n${said}`);
  // --no-definitely-typed: the packages ship their own types; no @types lookup on the registry.
  await run(bin('attw'), [tarball, '--no-definitely-typed', '--format', 'ascii', '--no-color']);
}

/** A fresh project with the tarballs installed; returns its directory. */
async function project(dir, tarballs) {
  const typesNode = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).devDependencies[
    '@types/node'
  ];
  writeFileSync(
    join(dir, 'package.json'),
    `${JSON.stringify({ name: 'etcdkit-release-check', private: true, type: 'module' }, null, 2)}\n`,
  );
  await run(
    'npm',
    ['install', '--no-audit', '--no-fund', ...tarballs, `@types/node@${typesNode}`],
    { cwd: dir },
  );
  return dir;
}

/**
 * Compiles release-check/program.ts in the project as an ES module and as CommonJS (out/program.js,
 * out/program.cjs) and checks that each loads the packages its own way.
 */
async function compileProgram(dir) {
  copyFileSync(join(PROGRAMS, 'program.ts'), join(dir, 'program.ts'));
  copyFileSync(join(PROGRAMS, 'program.ts'), join(dir, 'program.cts'));
  const tsconfig = {
    compilerOptions: {
      strict: true,
      module: 'nodenext',
      moduleResolution: 'nodenext',
      target: 'es2022',
      lib: ['es2022'],
      types: ['node'],
      skipLibCheck: false,
      outDir: 'out',
    },
    files: ['program.ts', 'program.cts'],
  };
  writeFileSync(join(dir, 'tsconfig.json'), `${JSON.stringify(tsconfig, null, 2)}\n`);
  await run(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', dir], {
    cwd: dir,
  });
  const commonJs = readFileSync(join(dir, 'out', 'program.cjs'), 'utf8');
  check(
    commonJs.includes('require("@etcdkit/recipes")') &&
      commonJs.includes('require("@etcdkit/verify")'),
    'out/program.cjs does not require() the packages',
  );
  const esm = readFileSync(join(dir, 'out', 'program.js'), 'utf8');
  check(
    /from ['"]@etcdkit\/recipes['"]/.test(esm) && !/\brequire\(/.test(esm),
    'out/program.js does not import the packages',
  );
}

/**
 * Runs both compiled programs with `runtime` (`{ name, command }`) on the embedded server, then on
 * the real etcd at each of `etcdEndpoints`.
 */
async function runPrograms(dir, runtime, etcdEndpoints) {
  for (const endpoint of [undefined, ...etcdEndpoints]) {
    for (const program of ['out/program.js', 'out/program.cjs']) {
      const [binary, ...flags] = runtime.command;
      const { stdout } = await run(binary, [...flags, program, ...(endpoint ? [endpoint] : [])], {
        cwd: dir,
      });
      console.log(`  ${runtime.name} ${program}: ${stdout.trim()}`);
    }
  }
}

/**
 * The command line of the bin `bin` of @etcdkit/`pkg`: `npx --no -- BIN` (the linked bin, on this
 * Node), or its file run by `runtime` when one is given.
 */
function binCommand(pkg, bin, runtime) {
  if (runtime === undefined) return ['npx', '--no', '--', bin];
  return [...runtime.command, join('node_modules', '@etcdkit', pkg, 'bin', `${bin}.js`)];
}

/**
 * `etcdkit-server` in the project (`npx`, or run by `runtime`), then etcdctl put and get against it,
 * then {@link lockWithBin} there.
 */
async function serveWithBin(dir, runtime) {
  const endpoint = `http://127.0.0.1:${await freePort()}`;
  const [command, ...commandArgs] = binCommand('server-embedded', 'etcdkit-server', runtime);
  const how = runtime === undefined ? 'npx etcdkit-server' : `etcdkit-server on ${runtime.name}`;
  // detached: its own process group, so npx, the bin and the server stop together.
  const child = spawn(command, [...commandArgs, '--listen-client-urls', endpoint], {
    cwd: dir,
    detached: true,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let log = '';
  child.stderr.on('data', (chunk) => {
    log += chunk;
  });
  const exited = new Promise((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  try {
    await new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new CheckFailed(`${how} not ready in 30 s:\n${log}`)),
        30_000,
      );
      const poll = setInterval(() => {
        if (log.includes('ready to serve client requests')) {
          clearInterval(poll);
          clearTimeout(timer);
          resolve();
        }
      }, 20);
      void exited.then(({ code }) => {
        clearInterval(poll);
        clearTimeout(timer);
        reject(new CheckFailed(`${how} exited with ${code} before it was ready:\n${log}`));
      });
    });
    const etcdctl = (...command) =>
      run('etcdctl', ['--endpoints', endpoint, ...command], { env: { ETCDCTL_API: '3' } });
    await etcdctl('put', 'release-check', 'served by the packed bin');
    const { stdout } = await etcdctl('get', 'release-check', '--print-value-only');
    check(
      stdout === 'served by the packed bin\n',
      `etcdctl get through ${how} gave ${JSON.stringify(stdout)}`,
    );
    console.log(`  ${how} at ${endpoint}: etcdctl put and get ok`);
    await lockWithBin(dir, endpoint, runtime);
  } finally {
    process.kill(-child.pid, 'SIGTERM');
  }
  await exited;
  check(log.includes('received signal; shutting down'), `${how} did not stop on SIGTERM:\n${log}`);
}

/**
 * `etcdkit --help`, then `etcdkit lock NAME -- CMD` against the server at `endpoint` (`npx`, or run
 * by `runtime`).
 */
async function lockWithBin(dir, endpoint, runtime) {
  const [command, ...commandArgs] = binCommand('cli', 'etcdkit', runtime);
  const how = runtime === undefined ? 'npx etcdkit' : `etcdkit on ${runtime.name}`;
  const help = await run(command, [...commandArgs, '--help'], { cwd: dir });
  check(help.stdout.includes('etcdkit lock'), `${how} --help gave ${help.stdout}`);
  const script =
    'process.stdout.write(process.env.ETCD_LOCK_KEY + " " + process.env.ETCDKIT_FENCING_TOKEN)';
  const { stdout } = await run(
    command,
    [...commandArgs, 'lock', '--endpoints', endpoint, 'release-check'].concat([
      '--',
      process.execPath,
      '-e',
      script,
    ]),
    { cwd: dir },
  );
  check(
    /^release-check\/[0-9a-f]+ [1-9][0-9]*$/.test(stdout),
    `${how} lock ran its command with ${JSON.stringify(stdout)}`,
  );
  console.log(`  ${how} lock release-check -- CMD: CMD held ${stdout}`);
}

/**
 * Starts the real etcd `binary` on free loopback ports with its data in `dataDir`; resolves with
 * its client URL and a function that stops it (SIGTERM) and waits for its exit.
 */
async function startEtcd(binary, dataDir) {
  const client = `http://127.0.0.1:${await freePort()}`;
  const peer = `http://127.0.0.1:${await freePort()}`;
  const child = spawn(
    binary,
    ['--data-dir', dataDir, '--listen-client-urls', client, '--advertise-client-urls', client]
      .concat(['--listen-peer-urls', peer, '--initial-advertise-peer-urls', peer])
      .concat(['--initial-cluster', `default=${peer}`]),
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let log = '';
  child.stderr.on('data', (chunk) => {
    log += chunk;
  });
  const exited = new Promise((resolve) => child.on('exit', resolve));
  const stop = async () => {
    child.kill('SIGTERM');
    await exited;
  };
  const ready = await Promise.race([
    new Promise((resolve) => {
      const poll = setInterval(() => {
        if (!log.includes('ready to serve client requests')) return;
        clearInterval(poll);
        resolve(true);
      }, 20);
      void exited.then(() => clearInterval(poll));
    }),
    exited.then(() => false),
    new Promise((resolve) => setTimeout(() => resolve(false), 30_000)),
  ]);
  if (!ready) {
    await stop();
    throw new CheckFailed(`${binary} did not get ready in 30 s:\n${log}`);
  }
  const { stdout } = await run(binary, ['--version']);
  return { endpoint: client, version: /etcd Version: (\S+)/.exec(stdout)?.[1], stop };
}

/** The version `runtime` reports (`--version`: `v22.23.5`, `1.4.5`, `deno 2.9.6 (stable...)`). */
async function versionOf(runtime) {
  const { stdout } = await run(runtime.command[0], ['--version']);
  const version = /\d+\.\d+\.\d+\S*/.exec(stdout)?.[0];
  check(version !== undefined, `${runtime.command[0]} --version said ${JSON.stringify(stdout)}`);
  return version;
}

/** The etcd binary for `--etcd-binary`: ETCDKIT_ETCD_BIN, else /usr/bin/etcd; undefined if none. */
function etcdBinary() {
  const path = process.env.ETCDKIT_ETCD_BIN || '/usr/bin/etcd';
  return existsSync(path) ? path : undefined;
}

/**
 * The etcd binaries the programs run on: ETCDKIT_ETCD_BINS (comma-separated, as the testkit reads
 * it), else {@link etcdBinary}'s one, else none.
 */
function programEtcdBinaries() {
  const listed = (process.env.ETCDKIT_ETCD_BINS ?? '').split(',').filter((path) => path !== '');
  for (const path of listed) check(existsSync(path), `ETCDKIT_ETCD_BINS names ${path}: not found`);
  if (listed.length > 0) return listed;
  const binary = etcdBinary();
  return binary === undefined ? [] : [binary];
}

/** Pids of the etcd processes running with a data dir under `dir`. */
function etcdsUnder(dir) {
  return readdirSync('/proc')
    .filter((pid) => /^\d+$/.test(pid))
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8')
          .split('\0')
          .some((a) => a.startsWith(dir));
      } catch {
        return false; // gone meanwhile
      }
    });
}

/**
 * The packed etcdkit-verify bin: runs that must be valid on the embedded server and, when there is
 * an etcd binary, on real etcd it starts itself (no repository testkit in the project).
 */
async function verifyWithBin(dir) {
  const etcd = etcdBinary();
  const runs = [
    ['--workload', 'register', '--embedded', '--ops', '200', '--clients', '4'],
    // Its worker processes run from dist/ too; the fault exercises their talk with the parent.
    ['--workload', 'lock', '--embedded', '--fenced', '--faults', 'lease-expiry'],
  ];
  if (etcd !== undefined) {
    runs.push(
      ['--workload', 'register', '--etcd-binary', etcd, '--faults', 'kill', '--time', '5s'],
      ['--workload', 'txn', '--etcd-binary', etcd, '--members', '3', '--faults', 'pause'],
    );
  } else console.log('  no etcd binary (ETCDKIT_ETCD_BIN, /usr/bin/etcd): --etcd-binary not run');
  // The project's own temp dir: etcd data dirs under it are this check's.
  const tmp = join(dir, 'tmp');
  mkdirSync(tmp, { recursive: true });
  for (const verifyArgs of runs) {
    const { code, stdout, stderr } = await run(
      'npx',
      [
        '--no',
        '--',
        'etcdkit-verify',
        ...verifyArgs,
        ...(verifyArgs.includes('--time') ? [] : ['--time', '4s']),
        ...(verifyArgs.includes('lock') ? ['--clients', '2'] : []),
        '--json',
      ],
      { cwd: dir, anyExitCode: true, env: { TMPDIR: tmp } },
    );
    const summary = JSON.parse(stdout.trimEnd().split('\n').at(-1) ?? 'null');
    const faulted = verifyArgs.includes('--faults');
    check(
      code === 0 &&
        summary?.valid === true &&
        summary.ops > 0 &&
        (!faulted || summary.faults.some((f) => f.error === undefined)),
      `npx etcdkit-verify ${verifyArgs.join(' ')} exited with ${code}:\n${stdout}${stderr}`,
    );
    console.log(
      `  npx etcdkit-verify ${verifyArgs.join(' ')}: ${summary.target}, ${summary.ops} ops, ${summary.faults.length} faults, valid`,
    );
  }
  const left = etcdsUnder(tmp);
  check(left.length === 0, `etcdkit-verify left etcd processes running: ${left.join(', ')}`);
  check(
    readdirSync(tmp).every((name) => !name.startsWith('etcdkit-verify-etcd-')),
    `etcdkit-verify left etcd data in ${tmp}: ${readdirSync(tmp).join(', ')}`,
  );
}

async function main() {
  if (!args.has('--skip-build')) {
    step('building the packages');
    await run('npm', ['run', 'build']);
  }
  const work = mkdtempSync(join(tmpdir(), 'etcdkit-release-check-'));
  const tarballsDir = join(work, 'tarballs');
  const projectDir = join(work, 'project');
  mkdirSync(tarballsDir);
  mkdirSync(projectDir);
  try {
    step('packing');
    const tarballs = [];
    for (const name of PACKAGES) tarballs.push(await pack(name, tarballsDir));
    step('publint and attw on each tarball');
    for (const tarball of tarballs) await lint(tarball);
    step('installing the tarballs into a fresh project');
    await project(projectDir, tarballs);
    step('compiling the program as an ES module and as CommonJS');
    await compileProgram(projectDir);
    const node = { name: `node ${process.version.slice(1)}`, command: [process.execPath] };
    const others = [];
    for (const runtime of runtimes) {
      others.push({ ...runtime, name: `${runtime.name} ${await versionOf(runtime)}` });
    }
    // Each real etcd the programs run on, started once for every runtime.
    const servers = [];
    try {
      for (const [i, binary] of programEtcdBinaries().entries()) {
        servers.push(await startEtcd(binary, join(work, `etcd-data-${i}`)));
      }
      const on = ['the embedded server', ...servers.map((etcd) => `etcd ${etcd.version}`)];
      step(`running the programs on ${on.join(', ')}`);
      const endpoints = servers.map((etcd) => etcd.endpoint);
      for (const runtime of [node, ...others]) await runPrograms(projectDir, runtime, endpoints);
    } finally {
      for (const etcd of servers) await etcd.stop();
    }
    if (servers.length === 0) {
      console.log(
        '  no etcd binary (ETCDKIT_ETCD_BINS, ETCDKIT_ETCD_BIN, /usr/bin/etcd): not run on etcd',
      );
    }
    step('npx etcdkit-server with etcdctl, and npx etcdkit lock');
    await serveWithBin(projectDir);
    for (const runtime of others) {
      step(`etcdkit-server with etcdctl, and etcdkit lock, on ${runtime.name}`);
      await serveWithBin(projectDir, runtime);
    }
    step('npx etcdkit-verify');
    await verifyWithBin(projectDir);
    console.log(
      `release-check: ok on ${[node, ...others].map((runtime) => runtime.name).join(', ')}`,
    );
  } finally {
    if (args.has('--keep')) console.log(`release-check: kept ${work}`);
    else rmSync(work, { recursive: true, force: true });
  }
}

try {
  await main();
} catch (error) {
  console.error(
    `release-check: FAILED: ${error instanceof CheckFailed ? error.message : error.stack}`,
  );
  process.exitCode = 1;
}
