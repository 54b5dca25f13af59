import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { parseBasicAuthorization } from '../../engine/client-auth.js';
import { AccessDeniedError, InvalidClientError } from '../../engine/errors.js';
import { SigningKeys } from '../../events/keys.js';
import { parsePollRequest, poll } from '../../events/poll.js';
import type { ReceiverRecord } from '../../store/store.js';
import { okJsonAnswer, replyAnswer, type Answer } from '../answer.js';
import type { HandlerDeps } from '../endpoints/endpoint.js';
import { errorAnswer, failureOutcome, pathOf } from '../error-answer.js';
import { PollBodyError } from '../transport-errors.js';
import { ReceiverReports } from './receiver-reports.js';

import { JWKS_PATH, POLL_PATH, SSF_CONFIGURATION_PATH, SSF_STREAM_PATH } from '../paths.js';
import { DELIVERY_POLL, DELIVERY_PUSH, issuerPath, ssfRoutes, streamConfiguration, transmitterMetadata } from './ssf-streams.js';

export { JWKS_PATH, POLL_PATH, SSF_CONFIGURATION_PATH, SSF_STREAM_PATH };
/** A poll body is a few hundred acks at most: 1000 jtis of 36 characters and their quotes. */
const POLL_BODY_LIMIT = 64 * 1024;
/** The media type of a poll request's body, with or without parameters. */
const JSON_TYPE = /^application\/json\s*(?:;|$)/i;

export { DELIVERY_POLL, DELIVERY_PUSH, streamConfiguration, transmitterMetadata };

/** RFC 8935 §2.4 error codes for what the engine's errors become on these routes. */
const SET_ERRORS: Record<string, string> = { invalid_client: 'authentication_failed', access_denied: 'access_denied', invalid_request: 'invalid_request' };

/**
 * An error on the event routes, in RFC 8935 §2.3's shape `{"err", "description"}` (RFC 8936 uses
 * it too), classified by the server's one table (status, headers, unexpected) and written by the
 * one answer writer, so that logs and metrics see it like any other.
 */
function eventsErrorAnswer(err: unknown, request: FastifyRequest): Answer & { unexpected: boolean } {
  const a = errorAnswer(pollBodyError(err), pathOf(request), request.headers.authorization);
  const body = JSON.parse(a.payload.toString()) as { message: string };
  const code = SET_ERRORS[a.errorCode] ?? a.errorCode;
  return { ...a, payload: JSON.stringify({ err: code, description: body.message }) };
}

/**
 * fastify's refusals of a poll request's body as {@link PollBodyError}s, in the poll's own words:
 * the server's one table speaks of the forms every other endpoint takes (contract 3), and says
 * "Bad Request" for JSON that does not parse. Any other error as it is.
 */
function pollBodyError(err: unknown): unknown {
  switch ((err as { code?: unknown } | null)?.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return PollBodyError.notJson();
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new PollBodyError(400, 'The poll request body is not valid JSON: send a JSON object, for instance {"ack": [], "maxEvents": 100} (RFC 8936 §2.4)');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new PollBodyError(413, `The poll request body is larger than ${POLL_BODY_LIMIT / 1024} KiB`);
    default:
      return err;
  }
}

function sendEventsError(err: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const a = eventsErrorAnswer(err, request);
  if (a.unexpected) request.log.error({ reqId: request.id, err }, 'unexpected error');
  request.answered = { answer: a, clientId: null, jti: null, outcome: failureOutcome(err) };
  return replyAnswer(reply, a);
}

/**
 * The poll receiver of the request: its client by HTTP Basic (as at the introspection endpoint), or
 * by an access token with `ssf.manage` (an SSF receiver, CAEP interoperability profile).
 */
async function pollReceiver(deps: HandlerDeps, request: FastifyRequest): Promise<ReceiverRecord> {
  const header = request.headers.authorization;
  if (header === undefined) throw new InvalidClientError('', 'no_credentials');
  if (!/^Bearer /i.test(header)) return deps.engine.authenticatePollReceiver(parseBasicAuthorization(header), request.ip);
  const found = await deps.engine.pollReceiverByToken(header);
  if (!('ok' in found)) return found;
  if (!found.ok && found.status === 403) throw new AccessDeniedError(found.description);
  throw new InvalidClientError('', 'no_credentials');
}

/**
 * The security event routes (docs/events.md), on fastify only: POST /events/poll (RFC 8936), the
 * JWKS, the SSF transmitter metadata and the read-only stream configuration. In a plugin of their
 * own, so that JSON bodies are parsed here only (every other endpoint takes forms, contract 3).
 */
export function eventsRoutes(app: FastifyInstance, deps: HandlerDeps): void {
  const keys = new SigningKeys(deps.engine.store);
  const polls = new Set<AbortController>();
  // The pacing of long polls (events/poll.ts LONG_POLL_MIN_INTERVAL_MS): per receiver, in this process.
  const lastAnswered = new Map<string, number>();
  const reports = new ReceiverReports();
  void app.register(async (scope) => {
    // An empty body is a poll with every member at its default, as `{}` is (fastify refuses it).
    const json = scope.getDefaultJsonParser('error', 'error');
    scope.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit: POLL_BODY_LIMIT }, (request, body, done) =>
      body === '' ? done(null, undefined) : json(request, body.toString(), done),
    );
    scope.setErrorHandler((err, request, reply) => sendEventsError(err, request, reply));
    // A long poll ends with what it has (nothing) when the server stops, instead of holding shutdown.
    let closing = false;
    scope.addHook('preClose', async () => {
      closing = true;
      for (const c of polls) c.abort();
    });

    scope.post(POLL_PATH, async (request, reply) => {
      const receiver = await pollReceiver(deps, request);
      // A form is parsed by the server's own parser (every other endpoint takes forms): not a poll request.
      if (request.body !== undefined && !JSON_TYPE.test(request.headers['content-type'] ?? '')) throw PollBodyError.notJson();
      const body = parsePollRequest(request.body);
      const stop = new AbortController();
      // A poll that was still authenticating when the server began to stop does not wait either.
      if (closing) stop.abort();
      polls.add(stop);
      // Before the answer is written, 'close' means the client went away.
      reply.raw.once('close', () => stop.abort());
      try {
        const outcome = await poll({ store: deps.engine.store, keys, issuer: () => deps.engine.config.issuer, lastAnswered }, receiver, body, stop.signal);
        const reported = reports.report(receiver.id, outcome.setErrs);
        if (reported) request.log.warn({ reqId: request.id, ...reported }, 'the receiver reported errors for SETs');
        // Answered because the server is stopping: the connection goes too, rather than idle in keep-alive.
        const ok = okJsonAnswer(outcome.body);
        // Its memory serves a later answer once it has been sent, and only then ('finish': the last
        // byte handed to the system; an answer cut off is left to the garbage collector).
        reply.raw.once('finish', outcome.release);
        const answer = closing ? { ...ok, headers: { connection: 'close' } } : ok;
        request.answered = { answer, clientId: receiver.clientId, jti: null, outcome: null };
        return replyAnswer(reply, answer);
      } finally {
        polls.delete(stop);
      }
    });

    ssfRoutes(scope, deps, keys);

    scope.route({
      method: ['GET', 'HEAD'],
      url: JWKS_PATH,
      handler: async (_request, reply) => {
        // Read per request: it must name every key any node signs with. Short-lived in caches: a rotation shows within a minute.
        const payload = JSON.stringify(await keys.jwks());
        return replyAnswer(reply, { status: 200, headers: { 'cache-control': 'max-age=60' }, payload, noStore: false, errorCode: null, reason: null });
      },
    });

    // SSF 1.0 §7.2: at the well-known path, and for an issuer with a path, at that path after it (as RFC 8414 §3).
    const metadata = async (_request: FastifyRequest, reply: FastifyReply) => {
      const payload = JSON.stringify(transmitterMetadata(deps.engine.config.issuer));
      return replyAnswer(reply, { status: 200, headers: { 'cache-control': 'max-age=300' }, payload, noStore: false, errorCode: null, reason: null });
    };
    scope.route({ method: ['GET', 'HEAD'], url: SSF_CONFIGURATION_PATH, handler: metadata });
    scope.route({
      method: ['GET', 'HEAD'],
      url: `${SSF_CONFIGURATION_PATH}/*`,
      handler: async (request, reply) => {
        const path = issuerPath(deps.engine.config.issuer);
        const asked = request.url.split('?')[0]!.slice(SSF_CONFIGURATION_PATH.length).replace(/\/+$/, '');
        if (path === undefined || asked !== path) {
          const payload = JSON.stringify({ err: 'not_found', description: `no transmitter metadata here: the issuer is ${deps.engine.config.issuer}` });
          return replyAnswer(reply, { status: 404, headers: undefined, payload, noStore: true, errorCode: 'not_found', reason: null });
        }
        return metadata(request, reply);
      },
    });
  });
}
