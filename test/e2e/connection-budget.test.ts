import { afterAll, describe, expect, it } from 'vitest';
import { startServe, stopServe, type ServeProcess } from '../helpers/load.js';
import { PG_SKIP_MESSAGE, PG_URL, dropSchema, testSchemaName } from '../helpers/pg.js';

/**
 * `tokenctl serve` on PostgreSQL checks the server's connection budget as it starts: a pool that
 * would bring the server near max_connections gets a warning on stderr, naming what to change;
 * the default pool does not (docs/scale-out.md).
 */

if (!PG_URL) {
  console.warn(PG_SKIP_MESSAGE);
  it.skip(PG_SKIP_MESSAGE, () => undefined);
}

describe.skipIf(!PG_URL)('serve: the connection budget warning', () => {
  const schema = testSchemaName();
  const db = `${PG_URL}${PG_URL?.includes('?') ? '&' : '?'}schema=${schema}`;
  const started: ServeProcess[] = [];
  afterAll(async () => {
    for (const s of started) await stopServe(s);
    if (PG_URL) await dropSchema(PG_URL, schema);
  }, 30_000);

  const serve = async (extra: string[]) => {
    const s = await startServe(['--db', db, '--log-level', 'warn', ...extra]);
    started.push(s);
    return s;
  };

  /** stderr without oclif's warning decoration and line wrapping. */
  const warnings = (s: ServeProcess) => s.stderr().replace(/\s*›\s*/g, ' ').replace(/\s+/g, ' ');

  it('warns when --pool-size would take nearly all of max_connections', async () => {
    const s = await serve(['--pool-size', '95']);
    expect(warnings(s)).toMatch(/this node may open up to 95 more, \d+ of the \d+ usable \(max_connections \d+, \d+ reserved\)/);
    expect(warnings(s)).toContain('Lower --pool-size, put PgBouncer in front, or raise max_connections');
    expect(s.stdout()).toContain('listening on'); // a warning, not a refusal
  });

  it('says nothing about it with the default pool', async () => {
    const s = await serve([]);
    expect(s.stdout()).toContain('listening on');
    expect(s.stderr()).not.toMatch(/max_connections/);
  });
});
