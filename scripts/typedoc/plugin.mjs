// A typedoc plugin that makes the API site's index readable without tags in the packages' sources:
//  - every export is given its category from ./categories.mjs (by the file it is declared in), and
//    an export no rule maps fails the build, naming the export and its file;
//  - the guides and READMEs (typedoc.json's projectDocuments) are titled by their first heading,
//    summarised by their line in docs/README.md (a README by its first sentence), and listed
//    under Packages or Guides;
//  - a relative link to a repository file that is not on the site (a test, a source file) points
//    to the file on GitHub instead of a raw copy in media/;
//  - an index entry without a summary (its doc comment's first paragraph) fails the build.

import { relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Comment, CommentTag, Converter, ReflectionKind } from 'typedoc';
import ts from 'typescript';
import { CATEGORIES, categoryOf, describeExport } from './categories.mjs';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const REPOSITORY = 'https://github.com/etcdkit/etcdkit/blob/main/';
const PACKAGES = 'Packages';
const GUIDES = 'Guides';

export function load(app) {
  const categories = new Map();
  const unmapped = new Map();

  app.converter.on(Converter.EVENT_CREATE_DECLARATION, (context, reflection) => {
    if (!reflection.parent?.kindOf(ReflectionKind.Module)) return;
    const symbol = context.getSymbolFromReflection(reflection);
    if (symbol === undefined) return;
    const described = describeExport(ts, context.checker, symbol);
    const category = described.location && categoryOf({ ...described, name: reflection.name });
    if (category === undefined) {
      unmapped.set(reflection, described.location ?? 'outside packages/*/src');
      return;
    }
    categories.set(reflection, category);
  });

  // Before typedoc's CategoryPlugin (priority -200) sorts the children into categories.
  app.converter.on(
    Converter.EVENT_RESOLVE_END,
    (context) => {
      const project = context.project;
      for (const module of project.getChildrenByKind(ReflectionKind.Module)) {
        for (const child of module.children ?? []) {
          if (child.isReference()) describeReexport(child, categories);
        }
      }
      for (const [reflection, category] of categories) addCategory(reflection, category);
      for (const module of project.getChildrenByKind(ReflectionKind.Module)) {
        addCategory(module, PACKAGES);
      }
      const summaries = guideSummaries(project);
      for (const document of project.documents ?? []) {
        describeDocument(project, document, summaries);
      }
      linkUnpublishedFilesToRepository(project);
    },
    100,
  );

  // After it: the categories in the table's order, with their descriptions; then every entry of
  // every index must have a summary.
  app.converter.on(
    Converter.EVENT_RESOLVE_END,
    (context) => {
      orderCategories(context.project, [PACKAGES, GUIDES]);
      orderProjectEntries(context.project, [...guideSummaries(context.project).keys()]);
      for (const module of context.project.getChildrenByKind(ReflectionKind.Module)) {
        orderCategories(
          module,
          CATEGORIES.map((category) => category.title),
        );
        requireSummary(app, module);
        for (const child of module.children ?? []) {
          if (categories.has(child)) continue;
          const where = unmapped.get(child) ?? 'source unknown';
          app.logger.error(
            `${child.getFriendlyFullName()} (${where}) has no API category: add a rule to scripts/typedoc/categories.mjs`,
          );
        }
        for (const child of module.childrenIncludingDocuments ?? []) requireSummary(app, child);
      }
      for (const document of context.project.documents ?? []) requireSummary(app, document);
    },
    -300,
  );
}

/**
 * A re-export of another package's export (recipes re-exports the client's election errors) is
 * listed with the original's category and summary.
 */
function describeReexport(reference, categories) {
  const target = reference.getTargetReflectionDeep();
  const category = categories.get(target);
  if (category !== undefined) categories.set(reference, category);
  if (reference.comment === undefined && target.comment !== undefined) {
    reference.comment = new Comment(Comment.cloneDisplayParts(target.comment.summary));
  }
}

function addCategory(reflection, category) {
  reflection.comment ??= new Comment();
  reflection.comment.blockTags.push(
    new CommentTag('@category', [{ kind: 'text', text: category }]),
  );
}

function orderCategories(parent, order) {
  if (!parent.categories) return;
  parent.categories.sort((a, b) => order.indexOf(a.title) - order.indexOf(b.title));
  for (const category of parent.categories) {
    const description = CATEGORIES.find((c) => c.title === category.title)?.description;
    if (description) category.description = [{ kind: 'text', text: description }];
  }
}

/**
 * Under Packages the packages come before their READMEs; the guides are in the order of
 * docs/README.md's table (getting started first).
 */
function orderProjectEntries(project, guides) {
  const rank = (reflection) => {
    if (!reflection.isDocument()) return -1;
    const index = guides.indexOf(repositoryPath(project.files.getReflectionPath(reflection)));
    return index === -1 ? guides.length : index;
  };
  for (const category of project.categories ?? []) {
    // Array.prototype.sort is stable: equal ranks keep typedoc's order.
    category.children.sort((a, b) => rank(a) - rank(b));
  }
}

/**
 * A document's title (its first heading), summary and category. A guide's summary is its line in
 * the table of docs/README.md; a README's is its first sentence.
 */
function describeDocument(project, document, guideSummaries) {
  const path = repositoryPath(project.files.getReflectionPath(document));
  const text = Comment.combineDisplayParts(document.content);
  const heading = /^#\s+(.+)$/m.exec(text)?.[1]?.replaceAll('`', '').trim();
  const isGuide = path?.startsWith('docs/');
  if (heading) document.name = isGuide ? heading : `${heading} README`;
  document.frontmatter.category ??= isGuide ? GUIDES : PACKAGES;
  document.frontmatter.summary ??= isGuide ? guideSummaries.get(path) : firstSentence(text);
}

/** The guides' summaries: the rows `| [kv.md](kv.md) | what it answers |` of docs/README.md. */
function guideSummaries(project) {
  const summaries = new Map([['docs/README.md', 'Every guide, and the questions it answers.']]);
  const index = (project.documents ?? []).find(
    (document) => repositoryPath(project.files.getReflectionPath(document)) === 'docs/README.md',
  );
  const text = index ? Comment.combineDisplayParts(index.content) : '';
  for (const [, file, summary] of text.matchAll(/^\|\s*\[[^\]]*\]\(([^)#]+)\)\s*\|(.+)\|\s*$/gm)) {
    const line = summary.trim().replace(/^./, (first) => first.toUpperCase());
    summaries.set(`docs/${file}`, `${line}.`);
  }
  return summaries;
}

function firstSentence(markdown) {
  const paragraph = markdown
    .split(/\n\s*\n/)
    .map((p) => p.trim())
    .find((p) => p && !/^(#|```|\||<|!\[)/.test(p));
  if (!paragraph) return undefined;
  const plain = paragraph.replace(/\[([^\]]*)\]\([^)]*\)/g, '$1').replace(/\s+/g, ' ');
  return /^.*?\.(?=\s|$)/.exec(plain)?.[0] ?? plain;
}

/**
 * typedoc copies a relatively linked file that is not a document into media/ as it is (a .ts
 * test, unreadable there and cut off from its imports); the file's page on GitHub is the useful
 * target.
 */
function linkUnpublishedFilesToRepository(project) {
  const rewrite = (parts) => {
    for (const [i, part] of (parts ?? []).entries()) {
      if (part.kind !== 'relative-link' || typeof part.target !== 'number') continue;
      if (typeof project.files.resolve(part.target, project) === 'object') continue;
      const path = repositoryPath(project.files.resolvePath(part.target));
      if (path === undefined) continue;
      const anchor = part.targetAnchor ? `#${part.targetAnchor}` : '';
      parts[i] = { kind: 'text', text: `${REPOSITORY}${path}${anchor}` };
    }
  };
  for (const reflection of Object.values(project.reflections)) {
    if (reflection.isDocument()) rewrite(reflection.content);
    if (reflection.isDeclaration()) rewrite(reflection.readme);
    const comments = [reflection.comment, ...(reflection.signatures ?? []).map((s) => s.comment)];
    for (const comment of comments) {
      rewrite(comment?.summary);
      for (const tag of comment?.blockTags ?? []) rewrite(tag.content);
    }
  }
  rewrite(project.readme);
}

function repositoryPath(absolute) {
  if (absolute === undefined) return undefined;
  const path = relative(ROOT, absolute).split(sep).join('/');
  return path.startsWith('..') ? undefined : path;
}

/** The check behind the index's summary column (typedoc's commentShortSummary). */
function requireSummary(app, reflection) {
  const hasText = (parts) => parts?.some((part) => part.text.trim());
  if (reflection.isDocument()) {
    if (typeof reflection.frontmatter.summary === 'string' && reflection.frontmatter.summary)
      return;
  } else {
    const comments = [reflection.comment, reflection.signatures?.[0]?.comment];
    if (comments.some((comment) => hasText(comment?.getShortSummary(true)))) return;
  }
  app.logger.error(
    `${reflection.getFriendlyFullName()} has no summary on the API index: give it a doc comment whose first paragraph says what it is`,
  );
}
