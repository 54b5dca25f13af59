import { describe, it } from 'vitest';
import { PG_SKIP_MESSAGE, PG_URL } from '../helpers/pg.js';
import { describeRevocationIsFinal } from './revocation-is-final.js';

// Contract 6: a database whose default isolation is REPEATABLE READ (set on a role of its own,
// so the shared server's default is untouched) changes nothing the store guarantees.
if (PG_URL) describeRevocationIsFinal('postgres-repeatable-read', PG_URL);
else describe.skip('a revocation is final (postgres-repeatable-read)', () => it(PG_SKIP_MESSAGE, () => undefined));
