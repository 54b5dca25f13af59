import { InvalidRequestError } from './errors.js';

/**
 * The parameters of an OAuth request (RFC 6749 §3.2: the token endpoint's form body), each name
 * at most once: what the engine reads of a request, whatever carried it.
 */
export type Parameters = Readonly<Record<string, string | undefined>>;

/** A required parameter's value; missing or empty is {@link InvalidRequestError} naming it. */
export function required(params: Parameters, name: string): string {
  const value = params[name];
  if (value === undefined || value === '') throw new InvalidRequestError(`The parameter ${name} is missing`, name);
  return value;
}

/** An optional parameter's value; empty counts as omitted (RFC 6749 §3.1). */
export function optional(params: Parameters, name: string): string | undefined {
  const value = params[name];
  return value === '' ? undefined : value;
}
