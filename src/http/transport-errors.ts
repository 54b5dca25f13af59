import { InvalidClientError } from '../engine/errors.js';

/**
 * Errors of the HTTP transport itself (contract 3: 405, 413, 415, 404), beside the engine's
 * vocabulary in `engine/errors.ts`. `error-answer.ts` turns both into the endpoints' records.
 */
export abstract class HttpTransportError extends Error {
  abstract readonly status: number;
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/** Contract 3: the three endpoints take POST only; the answer carries `Allow: POST`. */
export class MethodNotAllowedError extends HttpTransportError {
  readonly status = 405;
  constructor(
    readonly method: string,
    readonly allow: string,
  ) {
    super(`The method ${method} is not allowed here: use ${allow}`);
  }
}

/** Contract 3: bodies other than `application/x-www-form-urlencoded` are refused with 415. */
export class UnsupportedMediaTypeError extends HttpTransportError {
  readonly status = 415;
  constructor(detail?: string) {
    super('The request body must be application/x-www-form-urlencoded' + (detail ? ` (${detail})` : ''));
  }
}

/** RFC 8936 §2.4: a poll request's body that is not one (415 not JSON, 413 too large, 400 not parsed). */
export class PollBodyError extends HttpTransportError {
  static notJson(): PollBodyError {
    return new PollBodyError(415, 'The poll request body must be application/json (RFC 8936 §2.4)');
  }
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * A request Node's HTTP parser refused before any route (a bad Content-Length, request smuggling,
 * a CR in a header: 400; headers too large: 431; too slow: 408). See `parser-refusals.ts`.
 */
export class MalformedRequestError extends HttpTransportError {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** No route at this path. */
export class RouteNotFoundError extends HttpTransportError {
  readonly status = 404;
  constructor(method: string, path: string) {
    super(`No endpoint ${method} ${path}: the endpoints are POST /oauth/token, /oauth/revocation and /oauth/introspection`);
  }
}

/**
 * The token endpoint got no client authentication it accepts (RFC 6749 §5.2 invalid_client:
 * "no client authentication included, or unsupported authentication method"). Answered like
 * any other invalid_client, with a description that says what to send instead.
 */
export class UnsupportedClientAuthError extends InvalidClientError {
  constructor(clientId: string, description: string) {
    super(clientId, 'no_credentials');
    this.message = description;
  }
}
