import type { ChildProcess } from 'node:child_process';
import type { Worker } from 'node:cluster';

/** What node:cluster sends a worker with each connection it hands over, and what the worker answers. */
interface ClusterMessage {
  cmd?: unknown;
  act?: unknown;
  seq?: unknown;
  ack?: unknown;
}

type Send = (message: unknown, handle?: unknown, ...rest: unknown[]) => boolean;

/**
 * node:cluster's round-robin scheduling (the default except on Windows) accepts each connection
 * in the primary, sends it to a worker over IPC, and keeps its own copy of the socket until the
 * worker acknowledges it (Node's lib/internal/cluster/round_robin_handle.js). A worker killed
 * before it acknowledged leaves that copy open in the primary, and the client waits for an answer
 * that never comes. This watches the connections handed to `worker` and, when it exits, closes
 * those it never acknowledged: their clients see the connection closed at once, on a request no
 * worker began (safe to send again). It reads cluster's internal messages (`NODE_CLUSTER`,
 * `newconn`, `ack`); should their shape change, it does nothing.
 */
export function closeUnacknowledgedHandoffs(worker: Worker): void {
  const child = worker.process as ChildProcess & { send: Send };
  const inFlight = new Map<number, { close(): void }>();
  const send: Send = child.send.bind(child);
  child.send = (message, handle, ...rest) => {
    const m = message as ClusterMessage | null;
    const h = handle as { close?: unknown } | undefined;
    if (m?.cmd === 'NODE_CLUSTER' && m.act === 'newconn' && typeof m.seq === 'number' && typeof h?.close === 'function') {
      inFlight.set(m.seq, h as { close(): void });
    }
    return send(message, handle, ...rest);
  };
  child.on('internalMessage', (message: ClusterMessage | null) => {
    if (message?.cmd === 'NODE_CLUSTER' && typeof message.ack === 'number') inFlight.delete(message.ack);
  });
  worker.once('exit', () => {
    for (const handle of inFlight.values()) handle.close();
    inFlight.clear();
  });
}
