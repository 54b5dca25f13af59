import { describeRevocationIsFinal } from './revocation-is-final.js';

describeRevocationIsFinal('sqlite', undefined);
