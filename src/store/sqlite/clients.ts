import type { Trail } from '../trail.js';
import { DuplicateClientError, type ClientRecord, type ClientSettings } from '../store.js';
import { insertUnique } from './errors.js';
import { clientFromRow, settingsParams, type ClientRow } from './statements.js';
import { SqliteStoreCore } from './store-core.js';
import type { ClientStore } from '../store.js';

/** The SQLite store's clients (ports/clients.ts). */
export abstract class SqliteClientStore extends SqliteStoreCore implements ClientStore {
  async createClient(client: ClientRecord, trail: Trail): Promise<void> {
    await this.write(() => {
      this.cache.forgetClients();
      insertUnique(() => this.st.insertClient.run({ ...client, ...settingsParams(client) }), () => new DuplicateClientError(client.id));
      this.trail(true, trail);
    });
  }

  /**
   * Every request authenticates its client, so client rows are kept between reads while nobody
   * commits (row-cache.ts): a kept row is exactly what a read would return now.
   */
  async getClient(id: string): Promise<ClientRecord | null> {
    return this.run(() => {
      this.cache.sync(this.st.dataVersion.get() as number);
      return this.cache.client(id, this.readClient);
    });
  }

  async listClients(): Promise<ClientRecord[]> {
    return this.run(() => (this.st.listClients.all() as ClientRow[]).map((row) => clientFromRow(row)!));
  }

  async deleteClient(id: string, trail: Trail): Promise<boolean> {
    return this.write(() => {
      this.cache.forgetClients();
      return this.trail(this.st.deleteClient.run(id).changes === 1, trail);
    });
  }

  async updateClientSecret(id: string, secretHash: string, at: number, trail: Trail): Promise<boolean> {
    return this.write(() => {
      this.cache.forgetClients();
      return this.trail(this.st.updateSecret.run(secretHash, at, id).changes === 1, trail);
    });
  }

  async updateClientSettings(id: string, settings: ClientSettings, trail: Trail): Promise<boolean> {
    return this.write(() => {
      this.cache.forgetClients();
      return this.trail(this.st.updateSettings.run({ id, ...settingsParams(settings) }).changes === 1, trail);
    });
  }
}
