import { context, SpanKind, SpanStatusCode, trace, type Tracer } from '@opentelemetry/api';
import type { AnswerObserver } from '../http/observer.js';
import type { TokenStore } from '../store/store.js';
import { whenSettled, wrapStore } from './wrap-store.js';

/**
 * OpenTelemetry tracing of the three endpoints and their store calls (`serve --trace`), with
 * `@opentelemetry/api` only. Without an SDK registered in the process (see
 * docs/observability.md, "Tracing"), the API's tracer is a no-op; without `--trace`, none of
 * this is even wired. Spans carry the endpoint, status and error code: never a token or secret.
 */
export const TRACER_NAME = 'tokenctl';

function tracer(): Tracer {
  return trace.getTracer(TRACER_NAME);
}

/** The endpoints that get a span (metadata, health and 404s do not). */
const TRACED = new Set(['token', 'revocation', 'introspection']);

/**
 * A span per answer of the three endpoints, `tokenctl <endpoint>`, covering the request from its
 * first byte (the record's duration) and parented to the active context: the server span of an
 * HTTP instrumentation (which reads the gateway's `traceparent`), when the SDK has one.
 */
export function traceAnswers(): AnswerObserver {
  return (record) => {
    if (!TRACED.has(record.endpoint)) return;
    const end = Date.now();
    const span = tracer().startSpan(
      `tokenctl ${record.endpoint}`,
      {
        kind: SpanKind.INTERNAL,
        startTime: end - record.durationMs,
        attributes: {
          'tokenctl.endpoint': record.endpoint,
          'http.response.status_code': record.status,
          ...(record.errorCode !== null && { 'tokenctl.error': record.errorCode }),
          ...(record.reason !== null && { 'tokenctl.reason': record.reason }),
          ...(record.outcome !== null && { 'tokenctl.outcome': record.outcome.kind }),
        },
      },
      context.active(),
    );
    if (record.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR, message: record.errorCode ?? String(record.status) });
    span.end(end);
  };
}

/**
 * The store with a span per call, `tokenctl.store <operation>`, active while the call runs (so a
 * database instrumentation's spans nest under it), a child of whatever context is active.
 */
export function traceStore(store: TokenStore): TokenStore {
  return wrapStore(store, (operation, call) => {
    const name = `tokenctl.store ${operation}`;
    const options = { kind: SpanKind.INTERNAL, attributes: { 'tokenctl.store.operation': operation } };
    return (...args) =>
      tracer().startActiveSpan(name, options, (span) =>
        whenSettled(
          () => call(...args),
          (failed, error) => {
            if (failed) span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.name : 'error' });
            span.end();
          },
        ),
      );
  });
}
