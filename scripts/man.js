#!/usr/bin/env node
/**
 * Writes tokenctl's man page, dist/man/tokenctl.1, from the command reference oclif's manifest
 * holds (the same source as docs/commands.md): every command with its summary, description,
 * arguments, flags and examples. package.json `man` names it, so a global install puts it where
 * `man tokenctl` finds it (https://docs.npmjs.com/cli/v10/configuring-npm/package-json#man).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';

const pjson = JSON.parse(readFileSync('package.json', 'utf8'));
const manifest = JSON.parse(readFileSync('oclif.manifest.json', 'utf8'));
const bin = pjson.oclif.bin;

/** Text as roff: backslashes escaped, and a line that starts with . or ' kept as text (groff_man(7)). */
function roff(text) {
  return String(text ?? '')
    .replace(/\\/g, '\\e')
    .replace(/-/g, '\\-')
    // Non-ASCII (… — →) as groff's Unicode escapes, so that the page needs no input encoding.
    .replace(/[^\t\n\x20-\x7e]/gu, (c) => `\\[u${c.codePointAt(0).toString(16).toUpperCase().padStart(4, '0')}]`)
    .split('\n')
    .map((line) => (/^[.']/.test(line) ? `\\&${line}` : line))
    .join('\n');
}

function template(text, id) {
  return String(text).replace(/<%= config\.bin %>/g, bin).replace(/<%= command\.id %>/g, id.replace(/:/g, ' '));
}

function flagLine(flag) {
  const names = [flag.char ? `\\-${flag.char}` : null, `\\-\\-${roff(flag.name)}`].filter(Boolean).join(', ');
  const value = flag.type === 'option' ? ` ${roff(flag.helpValue ?? (flag.options ? flag.options.join('|') : 'value'))}` : '';
  return `.TP\n.B ${names}${value}\n${roff(flag.description ?? flag.summary ?? '')}${flag.env ? ` (environment: ${roff(flag.env)})` : ''}`;
}

const out = [
  `.TH TOKENCTL 1 "" "tokenctl ${pjson.version}" "User Commands"`,
  '.SH NAME',
  `${bin} \\- ${roff(pjson.description)}`,
  '.SH SYNOPSIS',
  `.B ${bin}`,
  '.I command',
  '[\\fIflags\\fR]',
  '.SH DESCRIPTION',
  roff('Every command takes --db (a SQLite file path or a postgres:// URL; default tokens.db in the tokenctl data directory, or TOKENCTL_DB), and every command that prints data takes --json. Tokens and client secrets are printed only where the specification says so. The README and docs/ of the repository say more; docs/commands.md holds what this page holds.'),
  '.SH COMMANDS',
];
for (const id of Object.keys(manifest.commands).sort()) {
  const c = manifest.commands[id];
  if (c.hidden) continue;
  const name = `${bin} ${id.replace(/:/g, ' ')}`;
  const args = Object.values(c.args ?? {}).map((a) => (a.required ? `${a.name.toUpperCase()}` : `[${a.name.toUpperCase()}]`));
  out.push(`.SS "${roff([name, ...args].join(' '))}"`, roff(c.summary ?? ''));
  if (c.description) out.push('.PP', roff(c.description).replace(/\n\n+/g, '\n.PP\n'));
  const flags = Object.values(c.flags ?? {}).filter((f) => !f.hidden);
  if (flags.length > 0) out.push('.PP', 'Flags:', '.RS', ...flags.map(flagLine), '.RE');
  const examples = (c.examples ?? []).map((e) => (typeof e === 'string' ? { command: e } : e));
  if (examples.length > 0) {
    out.push('.PP', 'Examples:', '.RS');
    for (const e of examples) {
      if (e.description) out.push('.PP', roff(e.description));
      out.push('.nf', `\\fB${roff(template(e.command, id))}\\fR`, '.fi');
    }
    out.push('.RE');
  }
}
out.push(
  '.SH EXIT STATUS',
  roff('0 success; 1 failure; 2 usage or bad input; 3 introspect: the token is not active; 4 not found; 5 not confirmed; 6 no store; 130 interrupted.'),
  '.SH ENVIRONMENT',
  '.TP\n.B TOKENCTL_DB\nThe store, as \\-\\-db.',
  '.TP\n.B TOKENCTL_CLIENT_SECRET\nThe client secret of \\-\\-url, off the command line.',
  '.TP\n.B TOKENCTL_PROFILE\nA saved profile, as \\-\\-profile.',
  '.TP\n.B NO_COLOR\nNo colour.',
  '.SH SEE ALSO',
  'docs/commands.md, docs/cli.md in the tokenctl repository.',
);
mkdirSync('dist/man', { recursive: true });
writeFileSync('dist/man/tokenctl.1', out.join('\n') + '\n');
