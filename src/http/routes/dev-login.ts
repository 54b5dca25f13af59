import type { FastifyInstance } from 'fastify';
import { LoginRequestAnsweredError, LoginRequestNotFoundError } from '../../engine/errors.js';
import { browserCookie, csrfMatches, csrfToken } from '../browser-cookie.js';
import type { Form } from '../form.js';
import { devLoginPage } from '../pages/dev-login.js';
import { PAGE_HEADERS } from '../pages/page.js';
import { DEV_LOGIN_PATH } from '../paths.js';
import type { RouteDeps } from '../types.js';
import { pageOnError, queryOf, sendPage } from './authorize.js';

/**
 * The development login page (`serve --dev-login`, `--demo`; contract 5): the login app of a
 * developer's machine, built in. It answers login requests as the operator's login app would,
 * in the server itself. Registered only when the development login is on.
 */
/** Relative to the page, so that the form posts back to it behind a proxy that serves the issuer under a path prefix. */
const DEV_LOGIN_ACTION = DEV_LOGIN_PATH.slice(DEV_LOGIN_PATH.lastIndexOf('/') + 1);

export function devLoginRoutes(app: FastifyInstance, { engine }: RouteDeps): void {
  if (!engine.config.devLogin) return;
  const flow = engine.authorization;

  app.get(DEV_LOGIN_PATH, pageOnError(async (request, reply) => {
    const challenge = new URLSearchParams(queryOf(request)).get('login_challenge') ?? '';
    const browser = browserCookie(request.headers);
    if (browser === null) return noCookie(reply);
    try {
      const view = await flow.builtInLoginRequest(challenge);
      return reply.code(200).headers(PAGE_HEADERS).send(devLoginPage({ request: view, challenge, csrf: csrfToken(browser, challenge), action: DEV_LOGIN_ACTION }));
    } catch (err) {
      return stale(reply, err);
    }
  }));

  app.post(DEV_LOGIN_PATH, pageOnError(async (request, reply) => {
    const form = (request.body as Form | undefined) ?? {};
    const challenge = form.login_challenge ?? '';
    const browser = browserCookie(request.headers);
    // A form posted from another site carries neither the cookie's HMAC nor, often, our Origin.
    const origin = request.headers.origin;
    const sameOrigin = origin === undefined || origin === new URL(engine.config.issuer).origin;
    if (!sameOrigin || !csrfMatches(browser, challenge, form.csrf_token)) {
      return sendPage(reply, 403, 'This form cannot be accepted', 'It was not sent from this sign-in page in this browser. Go back to the application and sign in again.');
    }
    const accept = form.decision !== 'deny';
    const username = (form.username ?? '').trim();
    if (accept && username === '') {
      return sendPage(reply, 400, 'A user name is needed', 'Go back, type any user name and sign in again.');
    }
    try {
      const answer = accept ? await flow.builtInAnswer(challenge, true, { subject: username, username }) : await flow.builtInAnswer(challenge, false, { error: 'access_denied', error_description: 'The user cancelled the sign-in' });
      // 303: the browser follows with a GET (RFC 9110 §15.4.4).
      return reply.code(303).header('location', answer.redirect_to).header('cache-control', 'no-store').send();
    } catch (err) {
      return stale(reply, err);
    }
  }));
}

function noCookie(reply: Parameters<typeof sendPage>[0]) {
  return sendPage(reply, 400, 'This sign-in was not started here', 'Open the application and start the sign-in from there (cookies must be enabled for this server).');
}

function stale(reply: Parameters<typeof sendPage>[0], err: unknown) {
  if (err instanceof LoginRequestNotFoundError) return sendPage(reply, 400, 'This sign-in has expired', 'Sign-in requests last 10 minutes. Go back to the application and sign in again.');
  if (err instanceof LoginRequestAnsweredError) return sendPage(reply, 400, 'This sign-in is already done', 'It was answered already. Go back to the application.');
  throw err;
}
