import { clientDeletedEvent } from './revocation-events.js';
import { randomBytes } from 'node:crypto';
import { DuplicateClientError, type ClientRecord } from '../store/store.js';
import { isRegistrableClientId } from './client-auth.js';
import { clientView, splitScope, type EngineContext } from './context.js';
import { InvalidInputError, NotFoundError } from './errors.js';
import type { ClientView } from './results.js';
import { generateSecret, hashSecret, MIN_SECRET_LENGTH } from './secrets.js';
import { auditLine } from './audit.js';
import type { ClientStore } from '../store/store.js';
import { checkClientSettings, defaultSettings, type ClientSettingsInput } from './client-settings.js';

/** The store ports this module uses (store/ports/). */
type Ports = ClientStore;

export interface CreateClientInput extends ClientSettingsInput {
  name: string;
  /** Public client (spec part 5 scenario II): no password. */
  public?: boolean;
  /** Use this password instead of generating one (confidential clients only). */
  secret?: string;
  /** Client id; generated from the name when absent. */
  id?: string;
  scope?: string;
  orgId?: string;
  audience?: string;
  accessTtlMs?: number;
  refreshTtlMs?: number;
}

/** A client and, once, its password in the clear (spec: shown once at creation). */
export interface ClientWithSecret {
  client: ClientView;
  client_secret: string | null;
}

const SCOPE_TOKEN = /^[\x21\x23-\x5b\x5d-\x7e]+$/; // RFC 6749 §3.3 scope-token

export function validateScope(scope: string, what = 'scope'): string {
  const parts = splitScope(scope);
  for (const part of parts) {
    if (!SCOPE_TOKEN.test(part)) {
      throw new InvalidInputError(`${what} "${part}" is not a valid scope name (printable ASCII without spaces, quotes or backslashes)`);
    }
  }
  return parts.join(' ');
}

function validateSecret(secret: string): void {
  if (secret.length < MIN_SECRET_LENGTH) {
    throw new InvalidInputError(`the client secret must be at least ${MIN_SECRET_LENGTH} characters long`);
  }
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(secret)) throw new InvalidInputError('the client secret must not contain control characters');
}

function validateTtl(ms: number | undefined, what: string): number | null {
  if (ms === undefined) return null;
  if (!Number.isFinite(ms) || ms < 1000) throw new InvalidInputError(`${what} must be at least 1s`);
  return ms;
}

function generateClientId(name: string): string {
  const slug = name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 32);
  return `${slug || 'client'}-${randomBytes(4).toString('hex')}`;
}

export async function createClient(ctx: EngineContext<Ports>, input: CreateClientInput, actor: string): Promise<ClientWithSecret> {
  const name = input.name.trim();
  if (name === '') throw new InvalidInputError('the client name must not be empty');
  if (input.public && input.secret !== undefined) {
    throw new InvalidInputError('a public client has no secret: drop --secret or --public');
  }
  if (input.secret !== undefined) validateSecret(input.secret);
  const id = input.id ?? generateClientId(name);
  if (!isRegistrableClientId(id)) {
    throw new InvalidInputError(`"${id}" is not a valid client id (at most 200 characters; no spaces, colons, '%', '+' or control characters)`);
  }
  const secret = input.public ? null : (input.secret ?? generateSecret());
  const settings = checkClientSettings(defaultSettings(input), { secretHash: secret });
  const now = ctx.clock.now();
  const record: ClientRecord = {
    id,
    name,
    secretHash: secret === null ? null : await hashSecret(secret),
    scope: validateScope(input.scope ?? ''),
    orgId: input.orgId ?? '',
    audience: input.audience ?? '',
    accessTtlMs: validateTtl(input.accessTtlMs, 'the access token lifetime'),
    refreshTtlMs: validateTtl(input.refreshTtlMs, 'the refresh token lifetime'),
    createdAt: now,
    secretUpdatedAt: now,
    ...settings,
  };
  try {
    const detail = [record.secretHash === null ? 'public' : 'confidential', `grants ${record.grantTypes.join(',')}`, ...(record.loginProvider ? ['login provider'] : []), ...(record.requireDpop ? ['requires DPoP'] : [])].join('; ');
    await ctx.store.createClient(record, { audit: auditLine(ctx, actor, 'client.create', `client:${id}`, 1, detail) });
  } catch (err) {
    if (err instanceof DuplicateClientError) throw new InvalidInputError(`a client with id "${id}" already exists`);
    throw err;
  }
  return { client: clientView(record), client_secret: secret };
}

export async function getClientOrThrow(ctx: EngineContext<Ports>, id: string): Promise<ClientRecord> {
  const client = await ctx.store.getClient(id);
  if (!client) throw new NotFoundError(`no client with id "${id}" (see: tokenctl client list)`);
  return client;
}

export async function deleteClient(ctx: EngineContext<Ports>, id: string, actor: string): Promise<ClientView> {
  const client = await getClientOrThrow(ctx, id);
  const line = auditLine(ctx, actor, 'client.delete', `client:${id}`, 1, 'client and its tokens deleted');
  if (!(await ctx.store.deleteClient(id, { audit: line, event: clientDeletedEvent(id, ctx.clock.now()) }))) throw new NotFoundError(`no client with id "${id}"`);
  return clientView(client);
}

export async function rotateClientSecret(ctx: EngineContext<Ports>, id: string, actor: string, secret?: string): Promise<ClientWithSecret> {
  const client = await getClientOrThrow(ctx, id);
  if (client.secretHash === null) throw new InvalidInputError(`client "${id}" is public and has no secret to rotate`);
  if (secret !== undefined) validateSecret(secret);
  const newSecret = secret ?? generateSecret();
  const now = ctx.clock.now();
  if (!(await ctx.store.updateClientSecret(id, await hashSecret(newSecret), now, { audit: auditLine(ctx, actor, 'client.rotate_secret', `client:${id}`, 1, '') }))) {
    throw new NotFoundError(`no client with id "${id}"`);
  }
  return { client: clientView({ ...client, secretUpdatedAt: now }), client_secret: newSecret };
}

/** A change of a client's settings: a list given replaces it; `add…`/`remove…` edit it. */
export interface UpdateClientInput {
  redirectUris?: readonly string[];
  addRedirectUris?: readonly string[];
  removeRedirectUris?: readonly string[];
  grantTypes?: readonly string[];
  loginProvider?: boolean;
  requireDpop?: boolean;
}

/** Changes a client's redirect URIs, grant types or login-provider mark (`client update`), audited. */
export async function updateClient(ctx: EngineContext<Ports>, id: string, input: UpdateClientInput, actor: string): Promise<ClientView> {
  const client = await getClientOrThrow(ctx, id);
  if (input.redirectUris !== undefined && (input.addRedirectUris !== undefined || input.removeRedirectUris !== undefined)) {
    throw new InvalidInputError('give either the whole list of redirect URIs or the ones to add and remove, not both');
  }
  let redirectUris: string[] = [...(input.redirectUris ?? client.redirectUris)];
  for (const uri of input.removeRedirectUris ?? []) {
    if (!redirectUris.includes(uri)) throw new InvalidInputError(`client "${id}" has no redirect URI "${uri.slice(0, 100)}" (see: tokenctl client show ${id})`);
    redirectUris = redirectUris.filter((u) => u !== uri);
  }
  redirectUris = [...redirectUris, ...(input.addRedirectUris ?? [])];
  const settings = checkClientSettings(
    { redirectUris, grantTypes: [...(input.grantTypes ?? client.grantTypes)], loginProvider: input.loginProvider ?? client.loginProvider, requireDpop: input.requireDpop ?? client.requireDpop },
    client,
  );
  const changed = (['redirectUris', 'grantTypes', 'loginProvider', 'requireDpop'] as const).filter((k) => JSON.stringify(settings[k]) !== JSON.stringify(client[k]));
  if (changed.length === 0) return clientView(client);
  const detail = changed.map((k) => `${k} ${Array.isArray(settings[k]) ? (settings[k] as string[]).join(',') || 'none' : String(settings[k])}`).join('; ');
  if (!(await ctx.store.updateClientSettings(id, settings, { audit: auditLine(ctx, actor, 'client.update', `client:${id}`, 1, detail) }))) {
    throw new NotFoundError(`no client with id "${id}"`);
  }
  return clientView({ ...client, ...settings });
}
