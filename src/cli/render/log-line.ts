import { Writable } from 'node:stream';
import { color } from './style.js';

const LEVELS: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
const SHOWN = ['client_id', 'jti', 'error', 'ip', 'reqId'];

/**
 * One pino (fastify) JSON log line as a person reads it: `12:00:01 INFO  POST /oauth/token 200
 * 1.2 ms client_id=web jti=…`. Fields other than the request's are kept as key=value; anything
 * that is not a JSON object is passed through unchanged.
 */
export function formatLogLine(line: string): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line;
  }
  if (!entry || typeof entry !== 'object') return line;
  const { level, time, msg, method, path, status, ms, pid: _pid, hostname: _hostname, ...rest } = entry;
  const when = typeof time === 'number' ? new Date(time).toISOString().slice(11, 19) : '';
  const name = LEVELS[level as number] ?? String(level);
  const paint = (level as number) >= 50 ? color.red : (level as number) >= 40 ? color.yellow : color.dim;
  const parts = [color.dim(when), paint(name.padEnd(5))];
  if (method !== undefined) {
    const code = Number(status);
    parts.push(`${String(method)} ${String(path)}`, code >= 500 ? color.red(String(status)) : code >= 400 ? color.yellow(String(status)) : color.green(String(status)), color.dim(`${String(ms)} ms`));
  } else if (msg !== undefined) parts.push(String(msg));
  const extra = [...SHOWN.filter((k) => k in rest), ...Object.keys(rest).filter((k) => !SHOWN.includes(k))]
    .filter((k) => !(method !== undefined && k === 'msg'))
    .map((k) => `${k}=${typeof rest[k] === 'string' ? rest[k] : JSON.stringify(rest[k])}`);
  return [...parts, ...extra.map((e) => color.dim(e))].join(' ');
}

/**
 * Where `serve` writes its logs: JSON lines (for collectors) unless stderr is a terminal, where
 * each line is formatted by {@link formatLogLine}.
 */
export function serveLogStream(target: NodeJS.WriteStream = process.stderr): NodeJS.WritableStream {
  if (!target.isTTY) return target;
  let pending = '';
  return new Writable({
    write(chunk: Buffer, _encoding, done) {
      pending += chunk.toString('utf8');
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) if (line !== '') target.write(formatLogLine(line) + '\n');
      done();
    },
  });
}
