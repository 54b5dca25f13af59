import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { Socket } from 'node:net';
import fastify, { LogController, type FastifyInstance, type FastifyReply, type FastifyRequest, type FastifyServerOptions } from 'fastify';
import type { Engine } from '../engine/engine.js';
import type { TrustProxy } from './client-address.js';
import { reportAnswer, type AnswerReporter } from './answer.js';
import { endpointRoute } from './endpoints/endpoint.js';
import { ENDPOINTS } from './endpoints/index.js';
import { installErrorHandlers, pathOf, sendError } from './error-answer.js';
import { createFastPath } from './fast-path.js';
import { BODY_LIMIT, FORM_MEDIA_TYPE, formBodyParser } from './form.js';
import type { AnswerObserver } from './observer.js';
import { createParserRefusals, createRefusal } from './parser-refusals.js';
import { eventsRoutes } from './routes/security-events.js';
import { healthRoutes } from './routes/health.js';
import { authorizeRoutes } from './routes/authorize.js';
import { devLoginRoutes } from './routes/dev-login.js';
import { loginRequestRoutes } from './routes/login-requests.js';
import { metadataRoute } from './routes/metadata.js';
import { Readiness } from './readiness.js';
import './types.js';

export interface BuildServerOptions {
  engine: Engine;
  /** fastify's (pino's) logger options, e.g. `{ level: 'info', stream }`; false (default) for none. */
  logger?: FastifyServerOptions['logger'];
  /** PEM key and certificate: the app serves HTTPS once listened. */
  https?: { key: string | Buffer; cert: string | Buffer };
  /** Connection limits; each defaults to {@link DEFAULT_CONNECTION_LIMITS}. */
  connections?: Partial<ConnectionLimits>;
  /**
   * Told of every answer, once, whichever door it went through (the fast path, fastify, Node's
   * parser refusing the request): for metrics. Nothing is computed for it when absent.
   */
  observer?: AnswerObserver;
  /**
   * The proxies whose `X-Forwarded-For` names the client (`serve --trust-proxy`, from
   * `trustedProxies`); none by default: the socket's peer is the client.
   */
  trustProxy?: TrustProxy;
  /** What `/health/ready` answers (serve drains it on SIGTERM); by default the engine's store, 5 s. */
  readiness?: Readiness;
  /** The longest an endpoint's request waits on the engine before its 503 (serve: --db-timeout + 1 s); none by default. */
  requestDeadlineMs?: number;
}

/**
 * What one connection may hold of the server, and for how long (SECURITY.md, "Connections").
 * Passed to `createServer`, where Node honours them, never set afterwards.
 */
export interface ConnectionLimits {
  /** HTTPS: the TLS handshake must be done within this, or the socket is closed. */
  handshakeTimeoutMs: number;
  /** A request's headers must have arrived within this of its first byte (or of the connection). */
  headersTimeoutMs: number;
  /** A whole request (headers and body) must have arrived within this. */
  requestTimeoutMs: number;
  /** A keep-alive connection idle this long after its last answer is closed. */
  keepAliveTimeoutMs: number;
  /** Open connections at once (per process); past it new ones are closed, idle ones first. */
  maxConnections: number;
}

export const DEFAULT_CONNECTION_LIMITS: ConnectionLimits = {
  handshakeTimeoutMs: 10_000,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  // fastify's default: longer than the idle timeouts of common load balancers.
  keepAliveTimeoutMs: 72_000,
  maxConnections: 1000,
};

const INFO_OR_FINER = new Set(['info', 'debug', 'trace']);

/** The app as the rest of tokenctl sees it, whether it serves HTTP or HTTPS. */
export type TokenctlApp = FastifyInstance;

/**
 * The HTTP face of the engine (spec part 4, contract 3): the three endpoints, RFC 8414 metadata
 * and the health routes (contract 6), on fastify. Returns the app without listening; `serve/` listens, tests too.
 */
export function buildServer(options: BuildServerOptions): TokenctlApp {
  let requests = 0;
  const nextId = (): string => 'req-' + (requests = (requests + 1) & 0x7fffffff).toString(36);
  // eslint-disable-next-line prefer-const -- the server is made inside fastify(), the app after it
  let app: FastifyInstance;
  let logRequests = false;
  const limits: ConnectionLimits = { ...DEFAULT_CONNECTION_LIMITS };
  for (const [name, value] of Object.entries(options.connections ?? {}) as [keyof ConnectionLimits, number | undefined][]) {
    if (value !== undefined) limits[name] = value;
  }
  const readiness = options.readiness ?? new Readiness(options.engine.store);
  const reporter: AnswerReporter = { log: () => app.log, logRequests: () => logRequests, observer: options.observer };
  const refuse = createRefusal({ reporter, nextId });
  const fastPath = createFastPath({ engine: options.engine, deadlineMs: options.requestDeadlineMs, reporter, nextId, trustProxy: options.trustProxy });
  app = fastify({
    logger: options.logger ?? false,
    genReqId: nextId,
    // The three POST endpoints' common requests skip fastify (see fast-path.ts); all else is fastify's.
    serverFactory: (handler) => {
      const listener = function (this: Server, req: IncomingMessage, res: ServerResponse): void {
        if (req.headers.host === undefined && req.httpVersion === '1.1') refuse(req, res, 400);
        // Closing (server.close() called): a request on a connection still open gets the 503 here.
        else if (!this.listening) refuse(req, res, 503);
        else {
          // Draining: answered, but the client's next request opens a connection the balancer sends elsewhere.
          if (readiness.draining) res.setHeader('connection', 'close');
          if (!fastPath(req, res)) handler(req, res);
        }
      };
      const timeouts = {
        headersTimeout: limits.headersTimeoutMs,
        requestTimeout: limits.requestTimeoutMs,
        keepAliveTimeout: limits.keepAliveTimeoutMs,
        // How often Node looks for connections past those timeouts (default 30 s, which made a
        // 30 s request timeout up to 60 s): a tenth of the shortest, within 0.1 s to 1 s.
        connectionsCheckingInterval: Math.min(1000, Math.max(100, Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs) / 10)),
        // Refused by the listener instead, in the endpoints' record (Node's own 400 has no body).
        requireHostHeader: false,
      };
      const server: Server = options.https
        ? createHttpsServer({ ...options.https, ...timeouts, handshakeTimeout: limits.handshakeTimeoutMs }, listener)
        : createHttpServer(timeouts, listener);
      limitConnections(server, limits.maxConnections);
      server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => refuse(req, res, 417));
      return server;
    },
    // One line per request from answer.ts instead of fastify's two, with client_id and jti.
    logController: new LogController({ disableRequestLogging: true }),
    // A path that is not valid percent-encoding: the endpoints' error record, not fastify's own.
    frameworkErrors: (err, request, reply) => sendError(err, request, reply),
    // Requests Node's parser refuses before any route: the same records and headers, not fastify's.
    clientErrorHandler: createParserRefusals({ reporter, nextId }),
    // Its own 503 has no record, no no-store and no log line: the listener answers those instead.
    return503OnClosing: false,
    // request.ip through the same function the fast path uses, so both doors key the budgets alike.
    trustProxy: options.trustProxy ?? false,
    bodyLimit: BODY_LIMIT,
    exposeHeadRoutes: false,
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
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
  app.decorateRequest('answered', null);
  installErrorHandlers(app);
  logRequests = INFO_OR_FINER.has(app.log.level);
  // Everything fastify answers is reported once it is sent, as the fast path reports its own.
  if (logRequests || options.observer) app.addHook('onResponse', async (request, reply) => reportFastify(reporter, request, reply));

  const deps = { engine: options.engine, deadlineMs: options.requestDeadlineMs };
  for (const endpoint of ENDPOINTS.values()) endpointRoute(app, endpoint, deps);
  metadataRoute(app, deps);
  healthRoutes(app, readiness);
  eventsRoutes(app, deps);
  authorizeRoutes(app, deps);
  loginRequestRoutes(app, deps);
  devLoginRoutes(app, deps);
  return app;
}

/** Reports an answer fastify sent (a route's, its error or not-found handler's). */
function reportFastify(reporter: AnswerReporter, request: FastifyRequest, reply: FastifyReply): void {
  const answered = request.answered;
  reportAnswer(reporter, {
    reqId: request.id,
    method: request.method,
    // A route with a parameter is logged by its pattern: the login challenge in the path is not.
    path: request.routeOptions.url?.includes(':') ? request.routeOptions.url : pathOf(request),
    ip: request.ip,
    answer: { status: reply.statusCode, errorCode: answered?.answer.errorCode ?? null, reason: answered?.answer.reason ?? null },
    clientId: answered?.clientId ?? null,
    jti: answered?.jti ?? null,
    outcome: answered?.outcome ?? null,
    ms: reply.elapsedTime,
  });
}

/**
 * Caps the connections open at once. Past the cap Node closes each new connection as it comes
 * ('drop'). Once the cap is reached, idle keep-alive connections are closed, so that the next
 * client with a request to send finds room rather than sockets that hold nothing; a connection
 * that has sent nothing yet, or is still in its TLS handshake, counts until its timeout closes it.
 */
function limitConnections(server: Server, max: number): void {
  server.maxConnections = max;
  let open = 0;
  server.on('connection', (socket: Socket) => {
    open++;
    socket.once('close', () => open--);
    if (open >= max) server.closeIdleConnections();
  });
  server.on('drop', () => server.closeIdleConnections());
}
