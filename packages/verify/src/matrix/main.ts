// `npm run verify [-- --short]`: runs the verification matrix, writes its table into
// docs/verification.md (between the results markers) and an HTML report per run that found
// anomalies; exits 1 if a run did not reach its expected verdict.
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { renderReport } from '../report/html.js';
import { verify } from '../verify.js';
import { MATRIX_SIZES, matrixCells, RESULTS_HEADER, resultRow } from './matrix.js';

const short = process.argv.includes('--short');
const root = fileURLToPath(new URL('../../../../', import.meta.url));
const doc = join(root, 'docs', 'verification.md');
const reports = join(root, '.etcdkit-tmp', 'verification');
const only = process.argv.find((a) => a.startsWith('--only='))?.slice('--only='.length);

const size = short ? MATRIX_SIZES.short : MATRIX_SIZES.full;
const cells = matrixCells(size, short).filter((c) => only === undefined || c.name.includes(only));
await mkdir(reports, { recursive: true });
const rows: string[] = [];
let failures = 0;

/** Rewrites the results section of docs/verification.md with the rows so far. */
async function writeDoc(done: boolean): Promise<void> {
  const stamp = `Run ${new Date().toISOString().slice(0, 10)} (${short ? 'short' : 'full'} matrix, up to ${size.ops} operations per KV run), on ${process.platform}/${process.arch}, node ${process.version}${done ? '' : `; ${rows.length} of ${cells.length} runs done so far`}.`;
  const table = [stamp, '', ...RESULTS_HEADER, ...rows].join('\n');
  if (short || only !== undefined) {
    if (done) console.log(`\n${table}`);
    return;
  }
  const text = await readFile(doc, 'utf8');
  const start = text.indexOf('<!-- results:start -->');
  const end = text.indexOf('<!-- results:end -->');
  if (start < 0 || end < start) throw new Error(`${doc} lacks the results markers`);
  await writeFile(
    doc,
    `${text.slice(0, start)}<!-- results:start -->\n${table}\n${text.slice(end)}`,
  );
}

for (const [i, cell] of cells.entries()) {
  const began = Date.now();
  let row: string;
  try {
    const result = await verify(cell.options);
    row = resultRow(cell, result);
    if (result.valid !== cell.expect) failures++;
    if (result.anomalies.length > 0 || result.valid !== true) {
      await writeFile(join(reports, `${i}.html`), renderReport(result));
    }
  } catch (error) {
    failures++;
    row = resultRow(cell, error instanceof Error ? error : new Error(String(error)));
  }
  rows.push(row);
  console.log(`${row}  (${Math.round((Date.now() - began) / 1000)} s)`);
  await writeDoc(i === cells.length - 1);
}
console.log(`reports of runs with anomalies: ${reports}`);
process.exitCode = failures === 0 ? 0 : 1;
