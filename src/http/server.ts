import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import fastify, { LogController, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import type { Engine } from '../engine/engine.js';
import { createClientErrorHandler } from './client-error.js';
import { installErrorHandlers, sendError } from './errors.js';
import { createFastPath } from './fast-path.js';
import { BODY_LIMIT, FORM_MEDIA_TYPE, formBodyParser } from './form.js';
import { logRequest } from './logging.js';
import { healthRoute } from './routes/health.js';
import { introspectionRoute } from './routes/introspection.js';
import { metadataRoute } from './routes/metadata.js';
import { revocationRoute } from './routes/revocation.js';
import { tokenRoute } from './routes/token.js';
import './types.js';

export interface BuildServerOptions {
  engine: Engine;
  /** fastify's (pino's) logger options, e.g. `{ level: 'info', stream }`; false (default) for none. */
  logger?: FastifyServerOptions['logger'];
  /** PEM key and certificate: the app serves HTTPS once listened. */
  https?: { key: string | Buffer; cert: string | Buffer };
}

const INFO_OR_FINER = new Set(['info', 'debug', 'trace']);
const REQUEST_TIMEOUT_MS = 30_000;
/** fastify's default: longer than the idle timeouts of common load balancers. */
const KEEP_ALIVE_TIMEOUT_MS = 72_000;

/** The app as the rest of tokenctl sees it, whether it serves HTTP or HTTPS. */
export type TokenctlApp = FastifyInstance;

/**
 * The HTTP face of the engine (spec part 4, contract 3): the three endpoints, RFC 8414 metadata
 * and /healthz, on fastify. Returns the app without listening; `serve/` listens, tests too.
 */
export function buildServer(options: BuildServerOptions): TokenctlApp {
  let requests = 0;
  const nextId = (): string => 'req-' + (requests = (requests + 1) & 0x7fffffff).toString(36);
  // eslint-disable-next-line prefer-const -- the server is made inside fastify(), the app after it
  let app: FastifyInstance;
  let logRequests = false;
  const fastPath = createFastPath({ engine: options.engine, log: () => app.log, logRequests: () => logRequests, nextId });
  app = fastify({
    logger: options.logger ?? false,
    genReqId: nextId,
    // The three POST endpoints' common requests skip fastify (see fast-path.ts); all else is fastify's.
    serverFactory: (handler) => {
      const listener = function (this: Server, req: IncomingMessage, res: ServerResponse): void {
        if (!fastPath(req, res, this.listening)) handler(req, res);
      };
      const server: Server = options.https ? createHttpsServer(options.https, listener) : createHttpServer(listener);
      // What fastify sets on a server it makes itself (its defaults, and requestTimeout below).
      server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
      server.requestTimeout = REQUEST_TIMEOUT_MS;
      server.setTimeout(0);
      return server;
    },
    // One line per request from logRequest instead of fastify's two, with client_id and jti.
    logController: new LogController({ disableRequestLogging: true }),
    // A path that is not valid percent-encoding: the endpoints' error record, not fastify's own.
    frameworkErrors: (err, request, reply) => sendError(err, request, reply),
    // Requests Node's parser refuses before any route: the same records and headers, not fastify's.
    clientErrorHandler: createClientErrorHandler({ log: () => app.log, logRequests: () => logRequests, nextId }),
    bodyLimit: BODY_LIMIT,
    exposeHeadRoutes: false,
    requestTimeout: REQUEST_TIMEOUT_MS,
    keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
    ...(options.https ? { https: options.https } : {}),
  }) as unknown as FastifyInstance;

  // No per-request child logger on the hot path: the request id is logged explicitly.
  app.setChildLoggerFactory((logger) => logger);
  // Only forms (contract 3): every other media type is 415 by having no parser.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(FORM_MEDIA_TYPE, { parseAs: 'buffer', bodyLimit: BODY_LIMIT }, (request, body, done) => {
    try {
      done(null, formBodyParser(request.headers['content-type'], body as Buffer));
    } catch (err) {
      done(err as Error, undefined);
    }
  });
  app.decorateRequest('clientId', null);
  app.decorateRequest('jti', null);
  app.decorateRequest('errorCode', null);
  installErrorHandlers(app);
  logRequests = INFO_OR_FINER.has(app.log.level);
  if (logRequests) app.addHook('onResponse', logRequest);

  const deps = { engine: options.engine };
  tokenRoute(app, deps);
  revocationRoute(app, deps);
  introspectionRoute(app, deps);
  metadataRoute(app, deps);
  healthRoute(app, deps);
  return app;
}
