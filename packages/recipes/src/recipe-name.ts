// The name check every recipe's constructor makes; the no-nesting rule needs other recipes, so it
// is a documented rule (docs/locks-and-fencing.md, "Naming recipes"), not a check.
import { InvalidArgumentError } from '@etcdkit/client';

/**
 * Returns `name` when it can name a recipe: a non-empty string that does not end in `/`. A
 * trailing `/` would put the recipe's keys at `name//...`, an empty segment under `name/`, where
 * the recipe named without the slash queues too. Otherwise throws InvalidArgumentError naming
 * `recipe` and its `argument`.
 */
export function recipeName(recipe: string, argument: string, name: unknown): string {
  if (typeof name !== 'string' || name === '') {
    throw new InvalidArgumentError(`${recipe}: ${argument} must be a non-empty string`);
  }
  if (name.endsWith('/')) {
    throw new InvalidArgumentError(
      `${recipe}: ${argument} ${JSON.stringify(name)} must not end with "/": the recipe adds the "/" itself`,
    );
  }
  return name;
}
