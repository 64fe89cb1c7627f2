// `npm run verify [-- --short]`: runs the verification matrix, writes its table into
// docs/verification.md (between the results markers) and an HTML report per run that found
// anomalies; exits 1 if a run did not reach its expected verdict. `-- --only=TEXT` runs the runs
// whose name contains TEXT and replaces their rows in the table (a note under it says so).
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { renderReport } from '../report/html.js';
import { verify } from '../verify.js';
import { judge, MATRIX_SIZES, matrixCells, RESULTS_HEADER, resultRow } from './matrix.js';
import { runScripted } from './scripted.js';

const short = process.argv.includes('--short');
const root = fileURLToPath(new URL('../../../../', import.meta.url));
const doc = join(root, 'docs', 'verification.md');
const reports = join(root, '.etcdkit-tmp', 'verification');
const only = process.argv.find((a) => a.startsWith('--only='))?.slice('--only='.length);

const size = short ? MATRIX_SIZES.short : MATRIX_SIZES.full;
const cells = matrixCells(size, short).filter((c) => only === undefined || c.name.includes(only));
await mkdir(reports, { recursive: true });
const rows: string[] = [];
const failed: string[] = [];

/** The results section of docs/verification.md: its text, and where it lies in the file. */
async function resultsSection(): Promise<{ text: string; start: number; end: number }> {
  const text = await readFile(doc, 'utf8');
  const start = text.indexOf('<!-- results:start -->');
  const end = text.indexOf('<!-- results:end -->');
  if (start < 0 || end < start) throw new Error(`${doc} lacks the results markers`);
  return { text, start: start + '<!-- results:start -->\n'.length, end };
}

/** Rewrites the results section of docs/verification.md with the rows so far. */
async function writeDoc(done: boolean): Promise<void> {
  const day = new Date().toISOString().slice(0, 10);
  const stamp = `Run ${day} (${short ? 'short' : 'full'} matrix, up to ${size.ops} operations per KV run), on ${process.platform}/${process.arch}, node ${process.version}${done ? '' : `; ${rows.length} of ${cells.length} runs done so far`}.`;
  const table = [stamp, '', ...RESULTS_HEADER, ...rows].join('\n');
  if (short) {
    if (done) console.log(`\n${table}`);
    return;
  }
  const { text, start, end } = await resultsSection();
  if (only === undefined) {
    await writeFile(doc, `${text.slice(0, start)}${table}\n${text.slice(end)}`);
    return;
  }
  if (!done) return;
  // Each row rerun takes the place of its run's row in the last table (the full matrix's, below a
  // short run's); a run the table lacks is added.
  const lines = text.slice(start, end).trimEnd().split('\n');
  const nameOf = (row: string) =>
    row.startsWith('| ') ? row.split(' | ')[0]?.slice(2) : undefined;
  for (const [i, row] of rows.entries()) {
    const at = lines.map(nameOf).lastIndexOf(cells[i]!.name);
    if (at >= 0) lines[at] = row;
    else lines.push(row);
  }
  const note = `Rerun ${day} with \`--only=${only}\`, on ${process.platform}/${process.arch}, node ${process.version}: ${cells.map((c) => c.name).join('; ')}.`;
  await writeFile(
    doc,
    `${text.slice(0, start)}${[...lines, '', note].join('\n')}\n${text.slice(end)}`,
  );
}

for (const [i, cell] of cells.entries()) {
  const began = Date.now();
  let row: string;
  try {
    const result = await ('script' in cell.run ? runScripted(cell.run.script) : verify(cell.run));
    row = resultRow(cell, result);
    const { verdict, fails } = judge(cell, result);
    if (fails) failed.push(`${cell.name}: ${verdict}`);
    if (result.anomalies.length > 0 || result.valid !== true) {
      await writeFile(join(reports, `${i}.html`), renderReport(result));
    }
  } catch (error) {
    // The row keeps the first line; the stack goes to stderr so a CI log shows where it broke.
    console.error(error instanceof Error ? error.stack : error);
    const reason = error instanceof Error ? error : new Error(String(error));
    failed.push(`${cell.name}: error: ${reason.message.split('\n')[0]}`);
    row = resultRow(cell, reason);
  }
  rows.push(row);
  console.log(`${row}  (${Math.round((Date.now() - began) / 1000)} s)`);
  await writeDoc(i === cells.length - 1);
}
console.log(`reports of runs with anomalies: ${reports}`);
// The last lines name every run that failed the matrix, so a CI log's tail says which.
for (const line of failed) console.log(`verify failed: ${line}`);
console.log(`verify: ${cells.length - failed.length} of ${cells.length} runs as expected`);
process.exitCode = failed.length === 0 ? 0 : 1;
