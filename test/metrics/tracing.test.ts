import { trace, type Span, type SpanOptions, type Tracer, type TracerProvider } from '@opentelemetry/api';
import { afterEach, describe, expect, it } from 'vitest';
import { processObservability } from '../../src/metrics/observability.js';
import { MemoryStore } from '../../src/store/memory/index.js';
import { StoreUnavailableError, type TokenStore } from '../../src/store/store.js';
import { addClient } from '../helpers/engine.js';

/** What a recording tracer saw: span names, attributes, status, ended or not. */
interface Recorded {
  name: string;
  options: SpanOptions;
  status?: number;
  ended: boolean;
  startTime?: unknown;
}

function recordingProvider(spans: Recorded[]): TracerProvider {
  const span = (record: Recorded): Span =>
    ({
      setStatus: (s: { code: number }) => ((record.status = s.code), undefined),
      end: () => void (record.ended = true),
      setAttribute: () => undefined,
      spanContext: () => ({ traceId: '0'.repeat(32), spanId: '0'.repeat(16), traceFlags: 1 }),
      isRecording: () => true,
    }) as unknown as Span;
  const tracer: Tracer = {
    startSpan: (name, options = {}) => {
      const record = { name, options, ended: false, startTime: options.startTime };
      spans.push(record);
      return span(record);
    },
    startActiveSpan: ((name: string, options: SpanOptions, fn: (span: Span) => unknown) => {
      const record = { name, options, ended: false };
      spans.push(record);
      return fn(span(record));
    }) as Tracer['startActiveSpan'],
  };
  return { getTracer: () => tracer };
}

describe('serve --trace', () => {
  afterEach(() => trace.disable());

  it('spans the three endpoints and every store call, marking failures, without a token in any attribute', async () => {
    const spans: Recorded[] = [];
    trace.setGlobalTracerProvider(recordingProvider(spans));
    const observability = processObservability({ trace: true });
    expect(observability.metrics).toBeUndefined();
    const memory = new MemoryStore();
    const store = observability.instrumentStore(memory);
    await addClient(store, { id: 'app' });
    const failing = processObservability({ trace: true }).instrumentStore(
      Object.assign(Object.create(memory) as TokenStore, { ping: () => Promise.reject(new StoreUnavailableError('down')) }),
    );
    await expect(failing.ping()).rejects.toThrow(StoreUnavailableError);
    observability.answerObserver!({ endpoint: 'introspection', status: 200, errorCode: null, reason: null, clientId: 'app', outcome: { kind: 'introspected', active: true }, durationMs: 3 });
    observability.answerObserver!({ endpoint: 'health', status: 200, errorCode: null, reason: null, clientId: null, outcome: null, durationMs: 1 });

    expect(spans.map((s) => s.name)).toEqual(['tokenctl.store createClient', 'tokenctl.store ping', 'tokenctl introspection']);
    expect(spans.every((s) => s.ended)).toBe(true);
    expect(spans[1]!.status).toBe(2); // SpanStatusCode.ERROR
    expect(spans[2]!.options.attributes).toMatchObject({ 'tokenctl.endpoint': 'introspection', 'http.response.status_code': 200, 'tokenctl.outcome': 'introspected' });
    expect(JSON.stringify(spans)).not.toMatch(/tc[ar]_/);
  });

  it('wires nothing when neither metrics nor tracing is asked for: the store is the store itself', () => {
    const observability = processObservability({ trace: false });
    const store = new MemoryStore();
    expect(observability.instrumentStore(store)).toBe(store);
    expect(observability.answerObserver).toBeUndefined();
    expect(observability.storeObserver).toBeUndefined();
  });
});
