import type { RenderedError } from './errors.js';

/** Commands that oclif's plugins bring, besides this package's. */
const PLUGIN_COMMANDS = ['help', 'autocomplete', 'autocomplete:create', 'autocomplete:script'];

/** Of those, the ones whose next word may be an argument (`autocomplete bash`), not a verb. */
const TAKES_ARGUMENT = new Set(['autocomplete']);

/**
 * An unknown command (`tokenctl revok`, `tokenctl instrospect X`, `tokenctl client crate`), as
 * the README's error, with the nearest commands as "did you mean". Undefined when argv names a
 * command or topic, or names none (flags only: oclif's --help and --version).
 */
export function unknownCommand(argv: string[], ids: string[]): RenderedError | undefined {
  const all = [...ids, ...PLUGIN_COMMANDS];
  const words = argv.slice(0, 2).filter((w, i) => !w.startsWith('-') && (i === 0 || !argv[0]!.startsWith('-')));
  if (words.length === 0) return undefined;
  const first = words[0]!.split(':');
  const head = first[0]!;
  const topics = new Set(all.filter((id) => id.includes(':')).map((id) => id.split(':')[0]!));
  if (!topics.has(head)) {
    if (all.includes(head)) return undefined;
    // A verb without its topic (`tokenctl list`): the commands that end with it.
    const verbs = all.filter((id) => id.endsWith(`:${head}`)).map((id) => id.replace(':', ' '));
    if (verbs.length > 0) return render(head, verbs);
    let suggestions = nearest(head, [...new Set(all.map((id) => id.split(':')[0]!))], all);
    // A mistyped topic with its verb (`tokn list`): the one command meant, when it exists.
    const verb = first[1] ?? words[1];
    const exact = suggestions.filter((s) => s.endsWith(` ${verb}`));
    if (exact.length > 0) suggestions = exact;
    return render(head, suggestions);
  }
  const sub = first[1] ?? words[1];
  if (sub === undefined || all.includes(`${head}:${sub}`)) return undefined;
  // `autocomplete bash`: the plugin command itself, with its shell as argument (oclif checks the value).
  if (first[1] === undefined && TAKES_ARGUMENT.has(head)) return undefined;
  const inTopic = all.filter((id) => id.startsWith(`${head}:`)).map((id) => id.slice(head.length + 1));
  return render(`${head} ${sub}`, nearest(sub, inTopic).map((s) => `${head} ${s}`));
}

function render(typed: string, suggestions: string[]): RenderedError {
  const hint =
    suggestions.length > 0
      ? `did you mean ${suggestions.map((s) => `tokenctl ${s}`).join(' or ')}? (tokenctl --help lists every command)`
      : 'tokenctl --help lists every command';
  return { code: 'unknown_command', message: `${typed} is not a tokenctl command`, exitCode: 2, hint };
}

/** The closest candidates by edit distance (at most a third of the word, at least 2), best first. */
function nearest(word: string, candidates: string[], full: string[] = []): string[] {
  const limit = Math.max(2, Math.floor(word.length / 3));
  const scored = candidates
    .map((c) => ({ c, d: distance(word.toLowerCase(), c.toLowerCase()) }))
    .filter((x) => x.d <= limit)
    .sort((a, b) => a.d - b.d || a.c.localeCompare(b.c));
  const best = scored.filter((x) => x.d === scored[0]?.d).map((x) => x.c);
  // A topic named alone is a command only with its verbs: `token` → token issue / token list.
  if (full.length === 0) return best.slice(0, 3);
  return best.flatMap((c) => (full.includes(c) ? [c] : full.filter((id) => id.startsWith(`${c}:`)).map((id) => id.replace(':', ' ')))).slice(0, 3);
}

/** Damerau-Levenshtein (optimal string alignment) distance: a swapped pair of letters counts 1. */
function distance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 0; j <= b.length; j++) d[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1);
    }
  }
  return d[a.length]![b.length]!;
}
