import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/cli.js';

/** The pages a reader reaches from the README: it, every page in docs/, the threat model, the bench's pages. */
const PAGES = [
  'README.md',
  'SECURITY.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
  'bench/README.md',
];

/** The README is a page, not a scroll (at most ~15 KB; the rest lives in docs/). */
const README_MAX_BYTES = 16 * 1024;

/** A page's lines outside fenced code blocks, with inline code spans blanked to `code`. */
function prose(markdown: string): string[] {
  const lines: string[] = [];
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (/^\s*```/.test(line)) {
      fenced = !fenced;
      continue;
    }
    if (!fenced) lines.push(line.replace(/`[^`]*`/g, 'code'));
  }
  return lines;
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens, -1, -2 for repeats. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (/^\s*```/.test(line)) fenced = !fenced;
    const heading = fenced ? null : /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const text = heading[1]!.replace(/\[([^\]]*)\]\([^)]*\)/g, '$1').replace(/`/g, '');
    const slug = text
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    result.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return result;
}

/** Every relative link target of a page (external URLs left out), as written. */
function relativeLinks(markdown: string): string[] {
  const targets: string[] = [];
  for (const line of prose(markdown)) {
    for (const m of line.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      const target = m[1]!;
      if (!/^[a-z][a-z0-9+.-]*:/i.test(target)) targets.push(target);
    }
  }
  return targets;
}

/** What is wrong with one link of `page`, or undefined when it resolves. */
function brokenLink(page: string, target: string): string | undefined {
  const [path, anchor] = target.split('#', 2) as [string, string | undefined];
  const file = path === '' ? join(ROOT, page) : resolve(dirname(join(ROOT, page)), decodeURIComponent(path));
  if (!relative(ROOT, file) || relative(ROOT, file).startsWith('..')) return `${target}: outside the repository`;
  if (!existsSync(file)) return `${target}: no such file`;
  if (anchor === undefined) return undefined;
  if (statSync(file).isDirectory() || !file.endsWith('.md')) return `${target}: an anchor into something that is not a page`;
  if (!anchors(readFileSync(file, 'utf8')).has(anchor)) return `${target}: no heading makes #${anchor}`;
  return undefined;
}

describe('the README and docs/', () => {
  it.each(PAGES)('every relative link and anchor in %s resolves', (page) => {
    const links = relativeLinks(readFileSync(join(ROOT, page), 'utf8'));
    expect(links.map((l) => brokenLink(page, l)).filter(Boolean)).toEqual([]);
  });

  it(`the README stays under ${README_MAX_BYTES / 1024} KB`, () => {
    expect(statSync(join(ROOT, 'README.md')).size).toBeLessThanOrEqual(README_MAX_BYTES);
  });

  it('the README links every page in docs/, so everything is one click away', () => {
    const links = relativeLinks(readFileSync(join(ROOT, 'README.md'), 'utf8'));
    expect(links.length, 'the checker finds the README\'s links').toBeGreaterThan(10);
    const linked = new Set(links.map((l) => l.split('#')[0]));
    expect(PAGES.filter((p) => p.startsWith('docs/') && !linked.has(p))).toEqual([]);
  });

  it('docs/development.md says why each dependency of package.json is here', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Record<string, Record<string, string>>;
    const page = readFileSync(join(ROOT, 'docs/development.md'), 'utf8');
    const named = (name: string) => page.includes(`\`${name}\``) || (name.startsWith('@types/') && page.includes('`@types/*`'));
    const missing = [...Object.keys(pkg.dependencies!), ...Object.keys(pkg.devDependencies!)].filter((name) => !named(name));
    expect(missing).toEqual([]);
  });

  it('the link checker sees what GitHub makes of headings', () => {
    const made = anchors('# A tour\n## `tokenctl autocomplete [SHELL]`\n### The `?schema=` parameter\n## A tour\n```\n# not a heading\n```\n');
    expect([...made]).toEqual(['a-tour', 'tokenctl-autocomplete-shell', 'the-schema-parameter', 'a-tour-1']);
    expect(relativeLinks('[a](docs/x.md#y) [b](https://example.com) `[c](z.md)`\n```\n[d](w.md)\n```\n')).toEqual(['docs/x.md#y']);
  });
});
