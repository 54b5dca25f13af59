import pg from 'pg';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Debian's `pgbouncer` (installed by .ci/run when missing), started by a test in front of the
 * test database on a free 127.0.0.1 port, with a stock configuration: no
 * `ignore_startup_parameters`, no `track_extra_parameters`, nothing tokenctl-specific.
 */

/** The binary, or undefined when it is not installed (the tests skip, saying so). */
export const PGBOUNCER = ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer', '/usr/local/bin/pgbouncer'].find((p) => existsSync(p));

export const PGBOUNCER_SKIP_MESSAGE =
  'PgBouncer tests skipped: no pgbouncer binary (apt-get install -y pgbouncer, as .ci/run does), or TOKENCTL_TEST_PG unset';

export type PoolMode = 'transaction' | 'session';

export interface PgBouncer {
  /** `databaseUrl` with PgBouncer's host and port instead of the server's. */
  url: string;
  port: number;
  /** What PgBouncer logged (its refusals name the startup parameter it refused). */
  log(): string;
  /** Closes every server connection once released (the console's RECONNECT): what `server_lifetime` does hourly. */
  reconnect(): Promise<void>;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

async function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/**
 * PgBouncer in `mode` in front of the database of `databaseUrl` (trust authentication, as the
 * test server has). Its pool to the server is `serverPoolSize` connections per user and
 * database. Started as root (a container), it drops to the `postgres` user, as it refuses root.
 */
export async function startPgBouncer(databaseUrl: string, mode: PoolMode, serverPoolSize = 20): Promise<PgBouncer> {
  if (!PGBOUNCER) throw new Error(PGBOUNCER_SKIP_MESSAGE);
  const target = new URL(databaseUrl);
  const user = decodeURIComponent(target.username || 'postgres');
  const database = decodeURIComponent(target.pathname.slice(1)) || user;
  const dir = mkdtempSync(join(tmpdir(), 'tokenctl-pgbouncer-'));
  chmodSync(dir, 0o755);
  const config = join(dir, 'pgbouncer.ini');
  const userlist = join(dir, 'userlist.txt');
  writeFileSync(userlist, `"${user}" ""\n`, { mode: 0o644 });

  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    writeFileSync(
      config,
      [
        '[databases]',
        `${database} = host=${target.hostname} port=${target.port || 5432} dbname=${database}`,
        '[pgbouncer]',
        'listen_addr = 127.0.0.1',
        `listen_port = ${port}`,
        'unix_socket_dir =',
        'auth_type = trust',
        `auth_file = ${userlist}`,
        `pool_mode = ${mode}`,
        'max_client_conn = 500',
        `default_pool_size = ${serverPoolSize}`,
        'server_check_delay = 0',
        `admin_users = ${user}`,
        '',
      ].join('\n'),
      { mode: 0o644 },
    );
    const args = process.getuid?.() === 0 ? ['-u', 'postgres', config] : [config];
    let output = '';
    const child: ChildProcess = spawn(PGBOUNCER, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout?.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    let alive = true;
    void exited.then(() => (alive = false));

    const deadline = Date.now() + 5_000;
    while (alive && Date.now() < deadline && !(await accepts(port))) await new Promise((r) => setTimeout(r, 50));
    if (alive && (await accepts(port))) {
      const url = new URL(databaseUrl);
      url.hostname = '127.0.0.1';
      url.port = String(port);
      return {
        url: url.toString(),
        port,
        log: () => output,
        reconnect: async () => {
          const admin = new pg.Client({ host: '127.0.0.1', port, user, database: 'pgbouncer' });
          await admin.connect();
          try {
            await admin.query('RECONNECT');
          } finally {
            await admin.end();
          }
        },
        stop: async () => {
          if (alive) {
            child.kill('SIGINT'); // immediate shutdown
            const killed = setTimeout(() => child.kill('SIGKILL'), 3_000);
            await exited;
            clearTimeout(killed);
          }
          rmSync(dir, { recursive: true, force: true });
        },
      };
    }
    child.kill('SIGKILL');
    await exited;
    // Another process took the port between freePort() and PgBouncer's bind: try another.
    if (attempt >= 3) {
      rmSync(dir, { recursive: true, force: true });
      throw new Error(`pgbouncer did not start: ${output.trim()}`);
    }
  }
}

/** Whether the binary runs at all here (the version line), so that a broken install skips with a reason too. */
export function pgBouncerVersion(): string | undefined {
  if (!PGBOUNCER) return undefined;
  const r = spawnSync(PGBOUNCER, ['--version'], { encoding: 'utf8', timeout: 5_000 });
  return r.status === 0 ? r.stdout.split('\n')[0] : undefined;
}
