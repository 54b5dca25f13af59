import type { Endpoint } from './endpoint.js';
import { introspection } from './introspection.js';
import { revocation } from './revocation.js';
import { token } from './token.js';

/** The three POST endpoints (spec part 4), by path: what both doors serve. */
export const ENDPOINTS: ReadonlyMap<string, Endpoint> = new Map([token, revocation, introspection].map((e) => [e.path, e]));
