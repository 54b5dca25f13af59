import type { FastifyInstance, FastifyRequest } from 'fastify';
import { parseBasicAuthorization, type PresentedCredentials } from '../../engine/client-auth.js';
import { InvalidRequestError } from '../../engine/errors.js';
import { okAnswer, replyAnswer } from '../answer.js';
import { BODY_LIMIT } from '../form.js';
import { LOGIN_REQUESTS_PATH } from '../paths.js';
import { UnsupportedClientAuthError } from '../transport-errors.js';
import type { RouteDeps } from '../types.js';

/**
 * The login app's back channel (contract 5, as ORY Hydra's login API): read a login request,
 * accept it for a user or reject it. The login app authenticates as a client registered with
 * `--login-provider`, with HTTP Basic (RFC 6749 §2.3.1). Bodies are JSON, in this scope only:
 * every other route still takes forms alone.
 */
export function loginRequestRoutes(app: FastifyInstance, { engine }: RouteDeps): void {
  const flow = engine.authorization;
  void app.register(async (scope) => {
    scope.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit: BODY_LIMIT }, (_request, body, done) => {
      try {
        done(null, body === '' ? undefined : JSON.parse(body as string));
      } catch {
        done(new InvalidRequestError('The body is not valid JSON'), undefined);
      }
    });
    type Challenged = FastifyRequest<{ Params: { challenge: string } }>;
    scope.get(`${LOGIN_REQUESTS_PATH}/:challenge`, async (request: Challenged, reply) => {
      const view = await flow.loginRequest(credentials(request), request.ip, request.params.challenge);
      return replyAnswer(reply, okAnswer(view));
    });
    scope.post(`${LOGIN_REQUESTS_PATH}/:challenge/accept`, async (request: Challenged, reply) => {
      const answer = await flow.accept(credentials(request), request.ip, request.params.challenge, request.body);
      return replyAnswer(reply, okAnswer(answer));
    });
    scope.post(`${LOGIN_REQUESTS_PATH}/:challenge/reject`, async (request: Challenged, reply) => {
      const answer = await flow.reject(credentials(request), request.ip, request.params.challenge, request.body ?? {});
      return replyAnswer(reply, okAnswer(answer));
    });
  });
}

function credentials(request: FastifyRequest): PresentedCredentials {
  const header = request.headers.authorization;
  if (header === undefined) throw new UnsupportedClientAuthError('', 'The login app authenticates with HTTP Basic: the Authorization header of a client created with --login-provider');
  return parseBasicAuthorization(header);
}
