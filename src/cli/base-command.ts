import { mkdirSync } from 'node:fs';
import { hostname, userInfo } from 'node:os';
import { join } from 'node:path';
import { Command, Flags, type Interfaces } from '@oclif/core';
// The engine and the store's composition point are imported statically: nearly every command
// runs them, and so they come with the CLI's first module instead of as two more module loads
// after oclif's start. The store drivers behind openStore (SQLite, PostgreSQL) stay lazy.
import { Engine, type EngineOptions } from '../engine/engine.js';
import { openStore, storeKindOf, type OpenStoreOptions } from '../store/open-store.js';
import { NoStoreError, type TokenStore } from '../store/store.js';
import { CliError, EXIT, redactTrace, renderCliError } from './errors.js';
import { formatError } from './render/errors.js';
import { givenSecrets } from './token-input.js';

export type BaseFlags<T extends typeof Command> = Interfaces.InferredFlags<(typeof BaseCommand)['baseFlags'] & T['flags']>;
export type BaseArgs<T extends typeof Command> = Interfaces.InferredArgs<T['args']>;

/**
 * What every tokenctl command shares: `--db` (and TOKENCTL_DB), `--json`, opening the store and
 * the engine only when needed, closing them, and turning any error into a message on stderr and
 * an exit code (see `cli/errors.ts`). Commands stay thin: parse, call the engine, render.
 */
export abstract class BaseCommand<T extends typeof Command> extends Command {
  static override enableJsonFlag = true;

  static override baseFlags = {
    db: Flags.string({
      description: 'Token store: a SQLite file path or a postgres:// URL [default: tokens.db in the tokenctl data directory]',
      env: 'TOKENCTL_DB',
      helpGroup: 'GLOBAL',
    }),
  };

  /**
   * How the command uses the store. Only `create` commands (serve, client create) may create a
   * store; the others refuse a missing one (contract 4), and `read` commands open a store they
   * may not write read-only.
   */
  static storeUse: 'create' | 'write' | 'read' = 'write';

  /**
   * The lines `--bare` prints of the command's result (a command with `bare: bareFlag` sets it):
   * only values a script assigns to a variable, never a label.
   */
  static bare?: (result: never) => string[];

  protected flags!: BaseFlags<T>;
  protected args!: BaseArgs<T>;
  private store?: TokenStore;

  public override async init(): Promise<void> {
    await super.init();
    const { args, flags } = await this.parse({
      flags: this.ctor.flags,
      baseFlags: (super.ctor as typeof BaseCommand).baseFlags,
      enableJsonFlag: this.ctor.enableJsonFlag,
      args: this.ctor.args,
      strict: this.ctor.strict,
    });
    this.flags = flags as BaseFlags<T>;
    this.args = args as BaseArgs<T>;
  }

  /** Where the store is: `--db`, TOKENCTL_DB, or the default file in the data directory. */
  protected storeLocation(): string {
    const db = (this.flags as { db?: string }).db;
    refuseEmptyLocation(db, this.defaultStore());
    if (db !== undefined) {
      if (process.argv.includes(db) && storeKindOf(db).showsPassword) {
        process.stderr.write('Warning: the password in --db is visible to other users (ps) and stays in shell history: use PGPASSWORD or ~/.pgpass instead (see docs/cli.md)\n');
      }
      return db;
    }
    if (this.storeUse() === 'create') mkdirSync(this.config.dataDir, { recursive: true, mode: 0o700 });
    return this.defaultStore();
  }

  /** The store this command opened, as it names itself (a PostgreSQL URL without its password): destructive commands say where they acted. */
  protected async storeName(): Promise<string> {
    return (await this.openStore()).location;
  }

  /** The default store: tokens.db in the data directory (contract 1). */
  protected defaultStore(): string {
    return join(this.config.dataDir, 'tokens.db');
  }

  protected storeUse(): 'create' | 'write' | 'read' {
    return (this.ctor as unknown as typeof BaseCommand).storeUse;
  }

  /** How to open the store; `serve` sets the PostgreSQL pool size and timeout. */
  protected storeOptions(): OpenStoreOptions {
    const use = this.storeUse();
    // An operator's command (an emergency `revoke --user` while the nodes are busy) would rather
    // retry serialization failures for up to 30 s than give up after a request's 2 s.
    return { create: use === 'create', readOnly: use === 'read', retryBudgetMs: 30_000 };
  }

  /** Opens the store (once). */
  protected async openStore(): Promise<TokenStore> {
    if (!this.store) {
      try {
        this.store = await openStore(this.storeLocation(), this.storeOptions());
      } catch (error) {
        if (error instanceof NoStoreError) throw noStoreError(error, this.defaultStore());
        throw error;
      }
    }
    return this.store;
  }

  /** An engine on the store, with the environment's settings. */
  protected async engine(options: Partial<EngineOptions> = {}): Promise<Engine> {
    const store = await this.openStore();
    return new Engine({ issuer: defaultIssuer(), node: defaultNode(), ...options, store });
  }

  /** Who acts, for the audit trail. */
  protected actor(): string {
    let user = 'unknown';
    try {
      user = userInfo().username;
    } catch {
      /* no passwd entry (containers): keep "unknown" */
    }
    return `cli:${user}`;
  }

  /** With `--bare` the human output is off as with --json, and logJson prints the bare values instead. */
  public override jsonEnabled(): boolean {
    return super.jsonEnabled() || this.bareEnabled();
  }

  private bareEnabled(): boolean {
    return (this.flags as { bare?: boolean } | undefined)?.bare === true && (this.ctor as unknown as typeof BaseCommand).bare !== undefined;
  }

  public override logJson(json: unknown): void {
    const bare = (this.ctor as unknown as typeof BaseCommand).bare as ((result: unknown) => string[]) | undefined;
    if (bare && this.bareEnabled()) {
      for (const line of bare(json)) process.stdout.write(`${line}\n`);
      return;
    }
    super.logJson(json);
  }

  protected override async catch(err: Error & { exitCode?: number }): Promise<unknown> {
    // oclif's --help/--version and this.exit() travel as errors too: let them through.
    if (err instanceof Error && (err.constructor.name === 'ExitError' || (err as { code?: string }).code === 'EEXIT')) throw err;
    const rendered = renderCliError(err);
    // --bare asks for values, not for JSON: its errors read as text.
    if (super.jsonEnabled()) {
      const { code, message, hint, details } = rendered;
      process.stderr.write(JSON.stringify({ error: { code, message, ...(hint ? { hint } : {}), ...details } }) + '\n');
    } else {
      process.stderr.write(formatError(rendered) + '\n');
    }
    if (process.env.TOKENCTL_DEBUG && err instanceof Error) process.stderr.write(`${redactTrace(debugTrace(err), this.secretsGiven())}\n`);
    process.exitCode = rendered.exitCode;
    await this.closeStore();
    return this.exit(rendered.exitCode);
  }

  /** Values on the command line or in the environment that a trace must not show. */
  private secretsGiven(): string[] {
    const f = (this.flags ?? {}) as Record<string, unknown>;
    const args = (this.args ?? {}) as Record<string, unknown>;
    const values = [f['client-secret'], f.secret, args.token, process.env.TOKENCTL_CLIENT_SECRET, process.env.PGPASSWORD];
    return [...values.filter((v): v is string => typeof v === 'string'), ...givenSecrets];
  }

  protected override async finally(err: Error | undefined): Promise<unknown> {
    await this.closeStore();
    return super.finally(err);
  }

  private async closeStore(): Promise<void> {
    const store = this.store;
    this.store = undefined;
    await store?.close();
  }
}

/**
 * An empty `--db` or TOKENCTL_DB is refused rather than read as "the default store": it is what
 * `--db "$PGURL"` gives when the variable is unset, and a bulk revocation must not then run
 * against another store. (oclif itself skips an empty TOKENCTL_DB, so it is checked here.)
 */
export function refuseEmptyLocation(db: string | undefined, defaultStore: string): void {
  const fromEnv = db === undefined && process.env.TOKENCTL_DB !== undefined;
  const value = fromEnv ? process.env.TOKENCTL_DB! : db;
  if (value === undefined || value.trim() !== '') return;
  const what = fromEnv ? 'TOKENCTL_DB is set but empty' : '--db is empty';
  throw new CliError(
    `${what}: it names no store, so nothing was opened or changed`,
    EXIT.usage,
    'empty_store_location',
    `give a SQLite file path or a postgres:// URL (is the variable you meant to pass set?), or leave ${fromEnv ? 'TOKENCTL_DB unset' : '--db out'} for the default store, ${defaultStore}`,
  );
}

/** A missing store, said with the default one and who may create a store. */
export function noStoreError(error: NoStoreError, defaultStore: string): CliError {
  const where = error.location === defaultStore ? 'this is the default store' : `the default store is ${defaultStore}`;
  return new CliError(
    error.message,
    EXIT.noStore,
    'no_store',
    `check --db (or TOKENCTL_DB); ${where}. Only serve, client create and migrate --to create a store`,
  );
}

/** The stack, and the stacks of its causes. */
function debugTrace(err: Error): string {
  let text = err.stack ?? String(err);
  let cause: unknown = err.cause;
  for (let depth = 0; cause instanceof Error && depth < 5; depth++) {
    text += `\nCaused by: ${cause.stack ?? String(cause)}`;
    cause = cause.cause;
  }
  return text;
}

export function defaultNode(): string {
  return process.env.TOKENCTL_NODE || hostname();
}

export function defaultIssuer(): string {
  return process.env.TOKENCTL_ISSUER || `https://${defaultNode()}`;
}

export { EXIT };
