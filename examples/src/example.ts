// Runs one example by name: `npm run example -- <name> [flags]`, e.g.
// `npm run example -- watch-informer --endpoints http://127.0.0.1:2379`. Without a name, lists them.
import { readdirSync } from 'node:fs';

const NOT_EXAMPLES = new Set(['example', 'support']);
const names = readdirSync(new URL('.', import.meta.url))
  .filter((file) => file.endsWith('.ts'))
  .map((file) => file.slice(0, -3))
  .filter((name) => !NOT_EXAMPLES.has(name))
  .sort();

const [name, ...flags] = process.argv.slice(2);
if (name === undefined || !names.includes(name)) {
  console.log(
    `usage: npm run example -- <name> [--endpoints http://...]\nexamples: ${names.join(', ')}`,
  );
  process.exitCode = name === undefined ? 0 : 1;
} else {
  // The example reads its flags from process.argv, as when it is run directly.
  process.argv = [process.argv[0] ?? 'node', name, ...flags];
  await import(`./${name}.ts`);
}
