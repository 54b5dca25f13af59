import type { Trail } from '../trail.js';
import { DuplicateClientError, type ClientRecord } from '../store.js';
import type { ClientSettings } from '../store.js';
import { MemoryStoreCore, compare } from './store-core.js';
import type { ClientStore } from '../store.js';

/** The in-memory store's clients (ports/clients.ts). */
export abstract class MemoryClientStore extends MemoryStoreCore implements ClientStore {
  async createClient(client: ClientRecord, trail: Trail): Promise<void> {
    const { audit } = trail;
    this.check();
    if (this.clients.has(client.id)) throw new DuplicateClientError(client.id);
    this.clients.set(client.id, copyClient(client));
    if (audit) this.appendAuditNow(audit);
  }

  async getClient(id: string): Promise<ClientRecord | null> {
    this.check();
    const c = this.clients.get(id);
    return c ? copyClient(c) : null;
  }

  async listClients(): Promise<ClientRecord[]> {
    this.check();
    return [...this.clients.values()].sort((a, b) => a.createdAt - b.createdAt || compare(a.id, b.id)).map(copyClient);
  }

  async deleteClient(id: string, trail: Trail): Promise<boolean> {
    const { audit, event } = trail;
    this.check();
    if (!this.clients.delete(id)) return false;
    for (const t of [...this.tokens.values()]) if (t.clientId === id) this.remove(t);
    this.authorizations.deleteClient(id);
    this.events.emit(event);
    if (audit) this.appendAuditNow(audit);
    return true;
  }

  async updateClientSecret(id: string, secretHash: string, at: number, trail: Trail): Promise<boolean> {
    const { audit } = trail;
    this.check();
    const c = this.clients.get(id);
    if (!c) return false;
    c.secretHash = secretHash;
    c.secretUpdatedAt = at;
    if (audit) this.appendAuditNow(audit);
    return true;
  }

  async updateClientSettings(id: string, settings: ClientSettings, trail: Trail): Promise<boolean> {
    this.check();
    const c = this.clients.get(id);
    if (!c) return false;
    Object.assign(c, { redirectUris: [...settings.redirectUris], grantTypes: [...settings.grantTypes], loginProvider: settings.loginProvider, requireDpop: settings.requireDpop });
    if (trail.audit) this.appendAuditNow(trail.audit);
    return true;
  }
}

/** A client record that shares nothing with `c`: its lists are copied too, so no caller changes what is stored. */
function copyClient(c: ClientRecord): ClientRecord {
  return { ...c, redirectUris: [...c.redirectUris], grantTypes: [...c.grantTypes] };
}
