import { describe, it } from 'vitest';
import { PG_SKIP_MESSAGE, PG_URL } from '../helpers/pg.js';
import { describeRevocationIsFinal } from './revocation-is-final.js';

if (PG_URL) describeRevocationIsFinal('postgres-serializable', PG_URL);
else describe.skip('a revocation is final (postgres-serializable)', () => it(PG_SKIP_MESSAGE, () => undefined));
