import fastify, { LogController, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import type { Engine } from '../engine/engine.js';
import { installErrorHandlers } from './errors.js';
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

/** The app as the rest of tokenctl sees it, whether it serves HTTP or HTTPS. */
export type TokenctlApp = FastifyInstance;

/**
 * The HTTP face of the engine (spec part 4, contract 3): the three endpoints, RFC 8414 metadata
 * and /healthz, on fastify. Returns the app without listening; `serve/` listens, tests too.
 */
export function buildServer(options: BuildServerOptions): TokenctlApp {
  const app = fastify({
    logger: options.logger ?? false,
    // One line per request from logRequest instead of fastify's two, with client_id and jti.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: BODY_LIMIT,
    exposeHeadRoutes: false,
    requestTimeout: 30_000,
    ...(options.https ? { https: options.https } : {}),
  }) as unknown as FastifyInstance;

  // No per-request child logger on the hot path: the request id is logged explicitly.
  app.setChildLoggerFactory((logger) => logger);
  // Only forms (contract 3): every other media type is 415 by having no parser.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(FORM_MEDIA_TYPE, { parseAs: 'buffer', bodyLimit: BODY_LIMIT }, (request, body, done) => {
    try {
      done(null, formBodyParser(request, body as Buffer));
    } catch (err) {
      done(err as Error, undefined);
    }
  });
  app.decorateRequest('clientId', null);
  app.decorateRequest('jti', null);
  app.decorateRequest('errorCode', null);
  installErrorHandlers(app);
  if (INFO_OR_FINER.has(app.log.level)) app.addHook('onResponse', logRequest);

  const deps = { engine: options.engine };
  tokenRoute(app, deps);
  revocationRoute(app, deps);
  introspectionRoute(app, deps);
  metadataRoute(app, deps);
  healthRoute(app, deps);
  return app;
}
