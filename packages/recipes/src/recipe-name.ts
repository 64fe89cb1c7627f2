// The one check of a recipe's name (or key prefix) made by every recipe's constructor. Only what
// is wrong whatever other recipes exist can be refused here; the rule that names must not nest is
// in docs/locks-and-fencing.md ("Naming recipes").
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
