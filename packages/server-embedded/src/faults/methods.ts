// Which gRPC methods a fault applies to. A method is named as in etcd's API: by its name alone
// (`Put`, `LeaseKeepAlive`), by service and name (`KV/Put`), or by its full path
// (`/etcdserverpb.KV/Put`). Names that match no method of the served API are refused at once, so a
// typo cannot silently inject nothing.
import { SERVED_SERVICES } from '../services/served-services.js';

/** A gRPC method: `Put`, `KV/Put` or `/etcdserverpb.KV/Put`. */
export type MethodName = string;

/** Every method path the server answers. */
const PATHS: readonly string[] = SERVED_SERVICES.flatMap((service) =>
  Object.values(service).map((method) => method.path),
);

/** The paths `name` stands for; throws when it names no method. */
export function resolveMethods(name: MethodName): ReadonlySet<string> {
  const matches = PATHS.filter((path) => matchesPath(name, path));
  if (matches.length === 0) throw new RangeError(`no gRPC method is named "${name}"`);
  return new Set(matches);
}

function matchesPath(name: string, path: string): boolean {
  if (name === path || `/${name}` === path) return true;
  // "/etcdserverpb.KV/Put": service "etcdserverpb.KV", method "Put".
  const [service = '', method = ''] = path.slice(1).split('/');
  const shortService = service.slice(service.lastIndexOf('.') + 1);
  return name === method || name === `${shortService}/${method}`;
}
