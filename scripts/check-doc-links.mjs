// Checks the generated API site (docs/api, from `npm run docs`) for links that go nowhere: every
// href and src of every HTML page, and every link of a markdown file copied into the site as it is,
// that points inside the site must name a file that exists and, when it has a #fragment into an
// HTML page, an element with that id (or name) there. Links to other sites are
// not fetched. Exit code 0 when every link resolves; otherwise each broken link, and exit code 1.
//
//   node scripts/check-doc-links.mjs [site directory, default docs/api]
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const site = resolve(ROOT, process.argv[2] ?? 'docs/api');

if (!existsSync(join(site, 'index.html'))) {
  console.error(
    `check-doc-links: no ${relative(ROOT, site)}/index.html; run \`npm run docs\` first`,
  );
  process.exit(1);
}

function* files(dir, extension) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* files(path, extension);
    else if (entry.name.endsWith(extension)) yield path;
  }
}

const ids = new Map();
/** The ids and names of a page's elements (the targets of #fragments), read once per page. */
function anchorsOf(file) {
  let anchors = ids.get(file);
  if (anchors === undefined) {
    const html = readFileSync(file, 'utf8');
    anchors = new Set([...html.matchAll(/\s(?:id|name)="([^"]*)"/g)].map((m) => decodeHtml(m[1])));
    ids.set(file, anchors);
  }
  return anchors;
}

function decodeHtml(text) {
  return text
    .replaceAll('&quot;', '"')
    .replaceAll('&#39;', "'")
    .replaceAll('&lt;', '<')
    .replaceAll('&gt;', '>')
    .replaceAll('&amp;', '&');
}

const broken = [];
let checked = 0;
/** The links of a page: href and src attributes of HTML, `](target)` of markdown copied as is. */
function linksOf(page) {
  const text = readFileSync(page, 'utf8');
  if (page.endsWith('.md')) {
    return [...text.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => ['link', m[1]]);
  }
  return [...text.matchAll(/\s(href|src)="([^"]*)"/g)].map((m) => [m[1], decodeHtml(m[2])]);
}

for (const page of [...files(site, '.html'), ...files(site, '.md')]) {
  for (const [attribute, link] of linksOf(page)) {
    // Other sites, mail and script links are not the site's to check.
    if (/^[a-z][a-z0-9+.-]*:/i.test(link) || link.startsWith('//')) continue;
    checked++;
    const [pathPart, fragment] = splitFragment(link);
    const target = pathPart === '' ? page : resolve(dirname(page), decodeURIComponent(pathPart));
    const where = `${relative(site, page)}: ${attribute}="${link}"`;
    if (target !== site && !target.startsWith(`${site}/`)) {
      broken.push(`${where} leaves the site`);
    } else if (!existsSync(target) || statSync(target).isDirectory()) {
      broken.push(`${where}: no file ${relative(site, target)}`);
    } else if (fragment && target.endsWith('.html') && !anchorsOf(target).has(fragment)) {
      broken.push(`${where}: no id "${fragment}" in ${relative(site, target)}`);
    }
  }
}

function splitFragment(link) {
  const hash = link.indexOf('#');
  if (hash === -1) return [link.split('?')[0], undefined];
  return [link.slice(0, hash).split('?')[0], decodeURIComponent(link.slice(hash + 1))];
}

if (broken.length > 0) {
  console.error(`check-doc-links: ${broken.length} broken link(s) in ${relative(ROOT, site)}:`);
  for (const line of broken) console.error(`  ${line}`);
  process.exit(1);
}
console.log(`check-doc-links: ${checked} links in ${relative(ROOT, site)}, all resolve`);
