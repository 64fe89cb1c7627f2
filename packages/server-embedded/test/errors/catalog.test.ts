// The server answers from the client's error catalog, so the two cannot disagree; these tests
// check what construction cannot: that each server error reads back on the client as the same
// entry, that the server's own errors use no etcd words, and that no source file outside the
// catalog spells an etcd message itself.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { etcdErrors, etcdErrorVariants, GrpcStatus, TransportError } from '@etcdkit/client';
import { fromTransportError, serverErrorClass } from '@etcdkit/client/internal';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { EtcdServerError, type ServerErrorCode } from '../../src/errors.js';

const ROOT = fileURLToPath(new URL('../../../..', import.meta.url));

/** What the client makes of the status and message the server sends for `error`. */
function readBack(error: EtcdServerError) {
  return fromTransportError(
    new TransportError({
      code: error.grpcCode as GrpcStatus,
      details: error.message,
      metadata: {},
      sent: true,
    }),
  );
}

const EMBEDDED_ONLY: readonly ServerErrorCode[] = [
  'RANGE_STREAM_SORT',
  'RANGE_STREAM_FILTER',
  'UNKNOWN_SERVICE',
  'VOTING_MEMBER_ADD',
];

describe('the server error catalog', () => {
  it.each(Object.entries(etcdErrors))('%s: the entry, read back as its class', (code, entry) => {
    const error = new EtcdServerError(code as ServerErrorCode);
    expect([error.grpcCode, error.message]).toEqual(entry);
    expect(readBack(error)).toMatchObject({ code, message: entry[1], grpcStatus: entry[0] });
  });

  it.each(Object.entries(etcdErrorVariants))(
    '%s: the variant, read back as the class of its entry',
    (name, variant) => {
      const error = new EtcdServerError(name as ServerErrorCode);
      expect([error.grpcCode, error.message]).toEqual([variant.status, variant.message]);
      expect(readBack(error)).toMatchObject({ code: variant.means, message: variant.message });
    },
  );

  it.each(EMBEDDED_ONLY)('%s: the embedded server’s own, in no words of etcd', (code) => {
    const error = new EtcdServerError(code);
    expect(serverErrorClass(error.message)).toBeUndefined();
    expect(error.message.startsWith('etcdserver:')).toBe(false);
    expect(readBack(error).code).toBe(
      error.grpcCode === GrpcStatus.Unimplemented ? 'UNIMPLEMENTED' : 'UNKNOWN',
    );
  });

  it('prints an error as etcd does in a watch cancel reason', () => {
    expect(new EtcdServerError('PERMISSION_DENIED').toGoText()).toBe(
      `rpc error: code = PermissionDenied desc = ${etcdErrors.PERMISSION_DENIED[1]}`,
    );
    expect(new EtcdServerError('WATCH_CANCELED').toGoText()).toMatch(
      /^rpc error: code = Canceled /,
    );
  });
});

/** Every .ts file under `dir`. */
function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => join(entry.parentPath, entry.name));
}

/** The text of every string literal and template part in `file`. */
function literals(file: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isStringLiteralLike(node) || ts.isTemplateLiteralToken(node)) found.push(node.text);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

const catalogMessages = [
  ...Object.values(etcdErrors).map(([, message]) => message),
  ...Object.values(etcdErrorVariants).map((variant) => variant.message),
];

describe('error sites', () => {
  // The catalog is the one place etcd's messages are written; every other site names an entry.
  const files = [
    ...sources(join(ROOT, 'packages/server-embedded/src')).filter(
      (file) => !file.endsWith('/src/errors.ts'),
    ),
    ...sources(join(ROOT, 'packages/client/src')).filter(
      (file) => !file.endsWith('/src/error-table.ts') && !file.includes('/generated/'),
    ),
  ];

  // grpc-go's own text for an expired deadline (status DeadlineExceeded): the same words as etcd's
  // PROPOSAL_TIMEOUT, which is Unknown.
  const notEtcds = new Set([
    'packages/server-embedded/src/faults/fault-injector.ts: context deadline exceeded',
  ]);

  it('spell no etcd message outside the catalog', () => {
    const copies = files.flatMap((file) =>
      literals(file)
        .filter(
          (text) =>
            text.startsWith('etcdserver: ') ||
            catalogMessages.some((message) => text.includes(message)),
        )
        .map((text) => `${relative(ROOT, file)}: ${text}`)
        .filter((site) => !notEtcds.has(site)),
    );
    expect(copies).toEqual([]);
  });

  it('are found by the scan (it reads the server’s sources)', () => {
    expect(files.length).toBeGreaterThan(50);
    expect(literals(join(ROOT, 'packages/server-embedded/src/errors.ts'))).toContain(
      'unknown service',
    );
  });
});
