import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { engineErrorName } from '../../engine/errors.js';
import { pushDestination } from '../../engine/push-destination.js';
import { EVENTS_SUPPORTED, eventsDelivered, MIN_VERIFICATION_INTERVAL_S, streamSettingsOf } from '../../engine/stream-settings.js';
import { DELIVERY_POLL, DELIVERY_PUSH, StreamConflictError, VerificationTooSoonError, type SsfAccess, type VerificationToPush } from '../../engine/streams.js';
import type { SigningKeys } from '../../events/keys.js';
import { pushVerification } from '../../events/verification.js';
import type { ReceiverRecord } from '../../store/store.js';
import { okAnswer, replyAnswer, type Answer } from '../answer.js';
import type { HandlerDeps } from '../endpoints/endpoint.js';
import { JWKS_PATH, POLL_PATH, SSF_STATUS_PATH, SSF_STREAM_PATH, SSF_VERIFY_PATH } from '../paths.js';

export { DELIVERY_POLL, DELIVERY_PUSH };

const trimmed = (issuer: string): string => issuer.replace(/\/+$/, '');

/** SSF 1.0 §7.1: what a receiver learns of the transmitter (only endpoints that answer), and what tokenctl adds (`tokenctl_*`). */
export function transmitterMetadata(issuer: string): Record<string, unknown> {
  const base = trimmed(issuer);
  return {
    spec_version: '1_0',
    issuer,
    jwks_uri: base + JWKS_PATH,
    delivery_methods_supported: [DELIVERY_PUSH, DELIVERY_POLL],
    configuration_endpoint: base + SSF_STREAM_PATH,
    status_endpoint: base + SSF_STATUS_PATH,
    verification_endpoint: base + SSF_VERIFY_PATH,
    // Access tokens of the client credentials grant (contract 5), scopes ssf.manage / ssf.read.
    authorization_schemes: [{ spec_urn: 'urn:ietf:rfc:6749' }],
    default_subjects: 'ALL',
    tokenctl_poll_endpoint: base + POLL_PATH,
    tokenctl_events_supported: EVENTS_SUPPORTED,
  };
}

/**
 * The path of the transmitter metadata for an issuer with a path (SSF 1.0 §7.2, as RFC 8414 §3):
 * `/.well-known/ssf-configuration/tenant` for `https://host/tenant`; none for an issuer without one.
 */
export function issuerPath(issuer: string): string | undefined {
  let path: string;
  try {
    path = new URL(issuer).pathname.replace(/\/+$/, '');
  } catch {
    return undefined;
  }
  return path === '' ? undefined : path;
}

/** SSF 1.0 §8.1.1: one stream's configuration (never its Authorization value). */
export function streamConfiguration(issuer: string, r: ReceiverRecord): Record<string, unknown> {
  const s = streamSettingsOf(r.stream);
  return {
    stream_id: r.id,
    iss: issuer,
    aud: r.audience,
    events_supported: EVENTS_SUPPORTED,
    events_requested: s.eventsRequested,
    events_delivered: eventsDelivered(s),
    delivery: r.delivery === 'poll' ? { method: DELIVERY_POLL, endpoint_url: trimmed(issuer) + POLL_PATH } : { method: DELIVERY_PUSH, endpoint_url: pushDestination(r.endpointUrl ?? '').url },
    description: s.description ?? 'tokenctl revocation events: drop the cached introspection answers each event covers',
    // SSF §8.1.1: verification requests sooner than this after the last are answered 429 (§8.1.4.2).
    min_verification_interval: MIN_VERIFICATION_INTERVAL_S,
    // A tokenctl member: the JWS algorithm of the stream's SETs.
    signing_alg: s.alg,
  };
}

/** SSF 1.0 §8.1.2: a stream's status. */
function streamStatus(r: ReceiverRecord): Record<string, unknown> {
  const s = streamSettingsOf(r.stream);
  return { stream_id: r.id, status: s.status, ...(s.reason !== undefined ? { reason: s.reason } : {}) };
}

/** The statuses of the engine's errors on these routes (SSF 1.0 §8.1.1: 400, 403, 404, 409); anything else goes to the events' handler. */
const STATUSES: Partial<Record<NonNullable<ReturnType<typeof engineErrorName>>, number>> = {
  InvalidInputError: 400,
  InvalidRequestError: 400,
  AccessDeniedError: 403,
  NotFoundError: 404,
};

function answer(status: number, body: unknown, headers?: Record<string, string>): Answer {
  return { ...okAnswer(body), status, headers, ...(status >= 400 ? { errorCode: String((body as { error?: string }).error ?? status) } : {}) };
}

/** RFC 6750 §3: the refusal of a request without a sufficient access token, with its challenge. */
function refusal(a: Exclude<SsfAccess, { ok: true }>): Answer {
  const params = [`error="${a.error}"`, `error_description="${a.description.replace(/["\\]/g, '')}"`, ...(a.scope ? [`scope="${a.scope}"`] : [])];
  return answer(a.status, { error: a.error, error_description: a.description }, { 'www-authenticate': `Bearer realm="tokenctl", ${params.join(', ')}` });
}

/**
 * The SSF 1.0 §8 management API: the stream configuration (POST create, GET read or list, PATCH
 * update, PUT replace, DELETE), its status (GET, POST) and verification (POST), each behind an
 * access token (ssfAccess). Registered in the events' plugin, whose JSON parser it uses.
 */
export function ssfRoutes(scope: FastifyInstance, deps: HandlerDeps, keys: SigningKeys): void {
  const engine = deps.engine;
  const issuer = () => engine.config.issuer;
  /** Runs `fn` for an authorized client and writes what it answers; the engine's refusals by {@link STATUSES}. */
  const route = (write: boolean, fn: (clientId: string, request: FastifyRequest) => Promise<Answer>) => async (request: FastifyRequest, reply: FastifyReply) => {
    const access = await engine.ssfAccess(request.headers.authorization, write);
    let a: Answer;
    if (!access.ok) a = refusal(access);
    else {
      try {
        a = await fn(access.clientId, request);
      } catch (err) {
        const status = err instanceof StreamConflictError ? 409 : err instanceof VerificationTooSoonError ? 429 : STATUSES[engineErrorName(err) ?? 'ServiceUnavailableError'];
        if (status === undefined) throw err;
        // RFC 9110 §10.2.3: when the verification may be asked for again.
        const headers = err instanceof VerificationTooSoonError ? { 'retry-after': String(err.retryAfterS) } : undefined;
        a = answer(status, { error: (err as { code?: string }).code ?? 'invalid_request', error_description: (err as Error).message }, headers);
      }
    }
    request.answered = { answer: a, clientId: access.ok ? access.clientId : null, jti: null, outcome: null };
    return replyAnswer(reply, a);
  };
  const streamIdOf = (request: FastifyRequest) => (request.query as Record<string, unknown>).stream_id;

  scope.get(
    SSF_STREAM_PATH,
    route(false, async (clientId, request) => {
      const id = streamIdOf(request);
      // SSF §8.1.1.2: without stream_id, every stream of the receiver, as an array.
      if (id === undefined) return answer(200, (await engine.listStreams(clientId)).map((r) => streamConfiguration(issuer(), r)));
      return answer(200, streamConfiguration(issuer(), await engine.getStream(clientId, id)));
    }),
  );
  scope.post(SSF_STREAM_PATH, route(true, async (clientId, request) => answer(201, streamConfiguration(issuer(), await engine.createStream(clientId, request.body)))));
  scope.patch(SSF_STREAM_PATH, route(true, async (clientId, request) => answer(200, streamConfiguration(issuer(), await engine.updateStream(clientId, request.body, false)))));
  scope.put(SSF_STREAM_PATH, route(true, async (clientId, request) => answer(200, streamConfiguration(issuer(), await engine.updateStream(clientId, request.body, true)))));
  scope.delete(
    SSF_STREAM_PATH,
    route(true, async (clientId, request) => {
      await engine.deleteStream(clientId, streamIdOf(request));
      // SSF §8.1.1.5: 204 No Content (an empty JSON body is not written).
      return { ...answer(204, ''), payload: '' };
    }),
  );
  /** Pushes a verification event after the answer, as SSF §8.1.4.2 has it (the answer says the request was taken); never throws. */
  const pushLater = (request: FastifyRequest, stream: ReceiverRecord, v: VerificationToPush) => {
    void pushVerification({ keys, issuer: issuer() }, stream, v.jti, v.state).then((result) => {
      if (result.kind !== 'accepted') request.log.warn({ stream: stream.id, error: result.error }, 'SSF verification event not delivered');
    });
  };
  scope.get(SSF_STATUS_PATH, route(false, async (clientId, request) => answer(200, streamStatus(await engine.getStream(clientId, streamIdOf(request))))));
  scope.post(
    SSF_STATUS_PATH,
    route(true, async (clientId, request) => {
      const changed = await engine.setStreamStatus(clientId, request.body);
      // A verification held while the push stream was paused goes now that it is enabled.
      if (changed.push) pushLater(request, changed.stream, changed.push);
      return answer(200, streamStatus(changed.stream));
    }),
  );
  scope.post(
    SSF_VERIFY_PATH,
    route(true, async (clientId, request) => {
      const v = await engine.requestVerification(clientId, request.body);
      // None to push: a poll stream's waits for the next poll, a paused push stream's until it is enabled.
      if (v.push) pushLater(request, v.stream, v.push);
      return { ...answer(204, ''), payload: '' };
    }),
  );
}
