import { describe, it } from 'vitest';
import { openTestStore, PG_SKIP_MESSAGE, PG_URL } from '../helpers/pg.js';
import { describePoll } from './poll-suite.js';

/** RFC 8936 poll over PostgreSQL (TOKENCTL_TEST_PG): a schema of its own per test. */
if (PG_URL) describePoll([{ name: 'postgres', open: () => openTestStore(PG_URL!, { poolSize: 4 }) }]);
else describe.skip('poll on PostgreSQL', () => it(PG_SKIP_MESSAGE, () => undefined));
