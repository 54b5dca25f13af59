import type { Engine, EngineOptions } from '../engine/engine.js';
import { demoInstructions, prepareDemo } from './demo.js';
import { waitForShutdownSignal } from './shutdown.js';
import { startServer } from './start.js';
import { chooseTransport, type TransportFlags } from './transport-choice.js';

export interface ServeSettings extends TransportFlags {
  port: number;
  /** Where `--tls-self-signed` keeps its certificate. */
  certDir: string;
  /** `--issuer`; without it, the URL the server listens on. */
  issuer?: string;
  node: string;
  rotateRefreshTokens?: boolean;
  refreshGraceMs?: number;
  accessTtlMs?: number;
  refreshTtlMs?: number;
  logLevel: string;
  /** Who acts, for the audit trail of `--demo`. */
  actor: string;
}

/** How `serve` talks to its operator: stdout lines, warnings and notes on stderr. */
export interface ServeOutput {
  line(text: string): void;
  warn(text: string): void;
  note(text: string): void;
}

/**
 * `tokenctl serve` from start to stop (contract 3): choose the transport (refusing plain HTTP
 * off loopback before opening anything), open the engine, listen, set up the demo if asked,
 * print `listening on <URL>`, and on SIGTERM/SIGINT stop gracefully. The caller closes the store.
 */
export async function serve(settings: ServeSettings, openEngine: (options: Partial<EngineOptions>) => Promise<Engine>, out: ServeOutput): Promise<void> {
  const transport = await chooseTransport(settings, settings.certDir);
  const engine = await openEngine({
    issuer: settings.issuer ?? 'https://localhost', // replaced by the URL once listening, unless given
    node: settings.node,
    rotateRefreshTokens: settings.rotateRefreshTokens,
    refreshGraceMs: settings.refreshGraceMs,
    accessTtlMs: settings.accessTtlMs,
    refreshTtlMs: settings.refreshTtlMs,
  });
  if (transport.warning) out.warn(transport.warning);

  // Before anything is printed: whoever reads "listening on" may signal at once.
  let force = (): void => process.exit(130);
  const stopSignal = waitForShutdownSignal(() => force());
  const server = await startServer({
    engine,
    host: settings.host,
    port: settings.port,
    tls: transport.tls,
    issuerFromUrl: settings.issuer === undefined,
    logger: { level: settings.logLevel, stream: process.stderr },
  });
  force = () => server.app.server.closeAllConnections();

  const certFile = transport.tls?.certFile;
  if (settings.demo) {
    out.line(demoInstructions(await prepareDemo(engine, settings.actor), server.url, certFile));
  } else {
    if ((await engine.listClients()).length === 0) {
      out.warn('the store has no clients yet: create one with "tokenctl client create --name app", or try "tokenctl serve --demo"');
    }
    if (settings.tlsSelfSigned && certFile) out.note(`certificate: ${certFile} (trust it with curl --cacert or tokenctl --ca)`);
  }
  out.line(`listening on ${server.url}`);

  const signal = await stopSignal;
  out.note(`${signal}: finishing requests in flight, then stopping`);
  await server.close();
}
