/** `[major, minor, patch]` of a version like `3.4.23` or `v3.6.0-rc.1`; undefined when unparsable. */
export function parseVersion(version: string): [number, number, number] | undefined {
  const match = /^v?(\d+)\.(\d+)(?:\.(\d+))?/.exec(version.trim());
  if (match === null) return undefined;
  return [Number(match[1]), Number(match[2]), Number(match[3] ?? '0')];
}

/** Whether `version` is at least `minimum`; an unparsable version is never enough. */
export function versionAtLeast(version: string, minimum: string): boolean {
  const have = parseVersion(version);
  const need = parseVersion(minimum);
  if (have === undefined || need === undefined) return false;
  for (let i = 0; i < 3; i++) {
    if (have[i]! !== need[i]!) return have[i]! > need[i]!;
  }
  return true;
}
