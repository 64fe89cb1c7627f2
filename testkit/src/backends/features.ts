import { versionAtLeast } from '../internal/version.js';
import type { BackendFeatures } from './types.js';

/** Features of a real etcd of `version`. */
export function etcdFeatures(version: string): BackendFeatures {
  return { rangeStream: versionAtLeast(version, '3.7.0') };
}
