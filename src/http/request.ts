import type { IncomingHttpHeaders } from 'node:http';
import type { RequestLog } from '../engine/client-requests.js';
import type { Form } from './form.js';

/**
 * One request to an endpoint, as both doors hand it over (the fast path over node:http, and
 * fastify's route): its method, target, headers, the peer's address and its form. An endpoint
 * reads what it needs of it, so that a check borne by a header reads that header here, once,
 * whichever door the request came through. What is not always needed costs nothing until read:
 * the form is parsed on first read (a body that is not a form is refused there, like any refusal).
 */
export class EndpointRequest implements RequestLog {
  /** The authenticated client, once the engine has told it: the log names it, also when the request is refused afterwards. */
  clientId: string | null = null;
  private parsed: Form | undefined;

  constructor(
    readonly method: string,
    /** The request target as sent: the path and any query (never logged whole: see `answer.ts`). */
    readonly url: string,
    readonly headers: IncomingHttpHeaders,
    /** The peer's network address: the brute-force budgets' key. */
    readonly peer: string | undefined,
    private readonly readForm: () => Form,
  ) {}

  /** The form body (RFC 6749 §3.2); throws the refusal (415, 400) of a body that is not one. */
  get form(): Form {
    return (this.parsed ??= this.readForm());
  }
}
