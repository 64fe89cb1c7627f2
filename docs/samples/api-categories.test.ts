// The API site lists every export under a category of scripts/typedoc/categories.mjs (the typedoc
// plugin fails `npm run docs` otherwise). This test fails first, without a docs build: it reads
// the exports of typedoc.json's entry points (the packages' index.ts) with the TypeScript compiler
// and maps each one.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { beforeAll, describe, expect, test } from 'vitest';
import {
  CATEGORIES,
  categoryOf,
  describeExport,
  ERRORS,
  type ExportDescription,
} from '../../scripts/typedoc/categories.mjs';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const ENTRY_POINTS: string[] = JSON.parse(readFileSync(`${ROOT}typedoc.json`, 'utf8')).entryPoints;

interface Mapped extends ExportDescription {
  readonly pkg: string;
  readonly category: string | undefined;
}

let exports: Mapped[] = [];

beforeAll(() => {
  const config = ts.getParsedCommandLineOfConfigFile(
    `${ROOT}tsconfig.docs.json`,
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
        throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'));
      },
    },
  );
  if (config === undefined) throw new Error('tsconfig.docs.json did not parse');
  const entries = ENTRY_POINTS.map((entry) => `${ROOT}${entry}`);
  const program = ts.createProgram(entries, { ...config.options, noEmit: true });
  const checker = program.getTypeChecker();
  exports = entries.flatMap((entry) => {
    const pkg = /packages\/([^/]+)\//.exec(entry)?.[1] ?? entry;
    const source = program.getSourceFile(entry);
    const module = source && checker.getSymbolAtLocation(source);
    if (module === undefined) throw new Error(`no module for ${entry}`);
    return checker.getExportsOfModule(module).map((symbol) => {
      const described = describeExport(ts, checker, symbol);
      const category =
        described.location === undefined
          ? undefined
          : categoryOf({ ...described, location: described.location });
      return { ...described, pkg, category };
    });
  });
}, 120_000);

/** The category of `<package> <export>`: `client Etcd`. */
const categoryOfExport = (qualified: string) =>
  exports.find((e) => `${e.pkg} ${e.name}` === qualified)?.category;

describe('API categories', () => {
  test('every export of the entry points has a category', () => {
    expect(ENTRY_POINTS).toContain('packages/client/src/index.ts');
    expect(exports.length).toBeGreaterThan(400);
    const unmapped = exports
      .filter((e) => e.category === undefined)
      .map((e) => `@etcdkit/${e.pkg} ${e.name} (${e.location ?? 'outside packages/*/src'})`);
    expect(unmapped).toEqual([]);
  });

  test('every category of a documented package lists at least one export', () => {
    const used = new Set(exports.map((e) => e.category));
    const documented = new Set(exports.map((e) => e.pkg));
    const unused = CATEGORIES.filter((c) =>
      c.rules.some((rule) => documented.has(rule.split(':')[0] ?? '')),
    )
      .map((c) => c.title)
      .filter((title) => !used.has(title));
    expect(unused).toEqual([]);
  });

  test('every class extending Error is under Errors, whatever file it is in', () => {
    const errors = exports.filter((e) => e.isError);
    expect(errors.length).toBeGreaterThan(70);
    expect(errors.filter((e) => e.category !== ERRORS)).toEqual([]);
    // Declared next to their feature, not in an errors.ts; the last is recipes' re-export.
    const beside = [
      'client LeaseLostError',
      'recipes TooManyClientsError',
      'recipes ElectionNoLeaderError',
    ];
    expect(beside.map(categoryOfExport)).toEqual(beside.map(() => ERRORS));
  });

  test('exports are mapped by their file, directory or name', () => {
    const expected = {
      'client Etcd': 'Client',
      'client KV': 'KV and txn',
      'client Watcher': 'Watch',
      'client LeaseRef': 'Lease',
      'client MaintenanceClient': 'Cluster and maintenance',
      'client AuthClient': 'Auth',
      'client LockClient': 'Election and lock',
      'recipes ServiceDiscovery': 'Service discovery',
      'recipes runStm': 'STM',
      'server-embedded FaultInjector': 'Testing',
      'server-embedded EmbeddedCluster': 'Embedded server',
      'server-embedded StoreWatcher': 'Server internals',
      'server-embedded DataDirLockedError': ERRORS,
    };
    const actual = Object.fromEntries(Object.keys(expected).map((e) => [e, categoryOfExport(e)]));
    expect(actual).toEqual(expected);
  });

  test('a file no rule names has no category (the docs build then fails)', () => {
    expect(categoryOf({ location: 'client:new-module.ts', name: 'New', isError: false })).toBe(
      undefined,
    );
    expect(categoryOf({ location: 'newpackage:index.ts', name: 'newThing', isError: false })).toBe(
      undefined,
    );
  });
});
