// @grpc/grpc-js is an optional peer dependency: without it the grpc-js transport is refused where
// the client is made, with a typed error that says what to install (scripts/release-check.mjs runs
// the same choice in a project that does not have it).
import { describe, expect, it } from 'vitest';
import { InvalidConfigError } from '../../src/errors.js';
import { GrpcJsTransport } from '../../src/transport/grpc-js.js';
import { requireGrpcJsInstalled } from '../../src/transport/grpc-js-module.js';

describe('@grpc/grpc-js as an optional peer dependency', () => {
  it('is found here, so the transport is made', () => {
    expect(new GrpcJsTransport().name).toBe('grpc-js');
  });

  it('missing, makes requireGrpcJsInstalled throw InvalidConfigError naming the package', () => {
    const missing = Object.assign(new Error("Cannot find module '@grpc/grpc-js'"), {
      code: 'MODULE_NOT_FOUND',
    });
    let asked = '';
    let thrown: unknown;
    try {
      requireGrpcJsInstalled((id) => {
        asked = id;
        throw missing;
      });
    } catch (error) {
      thrown = error;
    }
    expect(asked).toBe('@grpc/grpc-js');
    expect(thrown).toBeInstanceOf(InvalidConfigError);
    expect((thrown as InvalidConfigError).code).toBe('INVALID_CONFIG');
    expect((thrown as InvalidConfigError).message).toBe(
      "transport 'grpc-js' needs @grpc/grpc-js, an optional peer dependency of @etcdkit/client: " +
        'install it (npm install @grpc/grpc-js) or use the default transport',
    );
    expect((thrown as InvalidConfigError).cause).toBe(missing);
  });

  it('found by the resolver, throws nothing', () => {
    expect(() => requireGrpcJsInstalled((id) => `/somewhere/${id}/index.js`)).not.toThrow();
  });
});
