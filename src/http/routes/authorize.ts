import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { browserCookie, setBrowserCookie } from '../browser-cookie.js';
import { errorAnswer, pathOf } from '../error-answer.js';
import { errorPage, PAGE_HEADERS } from '../pages/page.js';
import { AUTHORIZE_CONTINUE_PATH, AUTHORIZE_PATH, DEV_LOGIN_PATH } from '../paths.js';
import type { RouteDeps } from '../types.js';

/**
 * The front channel of the authorization code flow (RFC 6749 §4.1, contract 5), fastify only:
 * `GET /oauth/authorize` checks the request and sends the browser to the login, and
 * `GET /oauth/authorize/continue` takes it back from the login and on to the client.
 */
export function authorizeRoutes(app: FastifyInstance, { engine }: RouteDeps): void {
  const flow = engine.authorization;

  app.get(AUTHORIZE_PATH, pageOnError(async (request, reply) => {
    if (!flow.available) {
      return sendPage(reply, 404, 'Sign-in is not enabled on this server', 'The server was started without a login. Its operator can start it with --login-url URL (their login app) or --dev-login (development only).');
    }
    const checked = await flow.check(queryPairs(request));
    if ('refusal' in checked) {
      const { refusal } = checked;
      if (refusal.to === 'page') return sendPage(reply, 400, 'This sign-in request is not valid', refusal.description, refusal.error);
      return redirect(reply, flow.refusalUrl(refusal));
    }
    const started = await flow.start(checked.request, browserCookie(request.headers));
    reply.header('set-cookie', setBrowserCookie(started.browser, engine.config.issuer.startsWith('https:')));
    return redirect(reply, flow.loginTarget(started.challenge, DEV_LOGIN_PATH)!);
  }));

  app.get(AUTHORIZE_CONTINUE_PATH, pageOnError(async (request, reply) => {
    const verifier = new URLSearchParams(queryOf(request)).get('login_verifier') ?? undefined;
    const outcome = await flow.continue(verifier, browserCookie(request.headers));
    if (outcome.to === 'page') return sendPage(reply, outcome.status, outcome.title, outcome.description);
    return redirect(reply, outcome.url);
  }));
}

type Handler = (request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply>;

/**
 * A browser's request that fails (the store down, a fault of ours) is answered with a page, not
 * the JSON record the API endpoints answer: a person reads it. The status and the log line are
 * the error table's (error-answer.ts).
 */
export function pageOnError(handler: Handler): Handler {
  return async (request, reply) => {
    try {
      return await handler(request, reply);
    } catch (err) {
      const answer = errorAnswer(err, pathOf(request));
      if (answer.unexpected) request.log.error({ reqId: request.id, err }, 'unexpected error');
      if (answer.headers?.['retry-after']) reply.header('retry-after', answer.headers['retry-after']);
      return answer.status === 503
        ? sendPage(reply, 503, 'Sign-in is unavailable right now', 'The server cannot reach its store. Try again in a moment.')
        : sendPage(reply, answer.status, 'Sign-in failed', 'The server could not handle this request; the error has been logged. Try again, or go back to the application.');
    }
  };
}

/** The raw query of a request (decoded by the caller, so that repeated names are seen). */
export function queryOf(request: FastifyRequest): string {
  const url = request.raw.url ?? '';
  const q = url.indexOf('?');
  return q === -1 ? '' : url.slice(q + 1);
}

/** The query as name/value pairs in order, so that a repeated parameter is seen (RFC 6749 §3.1). */
function queryPairs(request: FastifyRequest): [string, string][] {
  return [...new URLSearchParams(queryOf(request))];
}

/** RFC 6749 §4.1.2: 302 Found with the Location; never cached (it carries a code or a challenge). */
function redirect(reply: FastifyReply, location: string): FastifyReply {
  return reply.code(302).header('location', location).header('cache-control', 'no-store').header('referrer-policy', 'no-referrer').send();
}

export function sendPage(reply: FastifyReply, status: number, title: string, description: string, error?: string): FastifyReply {
  return reply.code(status).headers(PAGE_HEADERS).send(errorPage(title, description, error));
}
