import type { Trail } from '../trail.js';
import type { ClientRecord, ClientSettings } from '../records.js';

/**
 * Registered clients (RFC 6749 §2: "Before initiating the protocol, the client registers with the
 * authorization server"). Deleting one ends every token issued to it.
 */
export interface ClientStore {

  /**
   * Inserts a client. Rejects with {@link DuplicateClientError} if the id exists. With the trail's `audit`,
   * that line is written in the same transaction: an operator's change and its audit line commit
   * together or not at all (so do deleteClient's, updateClientSecret's and the receivers').
   */
  createClient(client: ClientRecord, trail: Trail): Promise<void>;
  getClient(id: string): Promise<ClientRecord | null>;
  listClients(): Promise<ClientRecord[]>;
  /**
   * Deletes a client and every token issued to it. Returns false if there was none. With the trail's `event`,
   * and only if it deleted the client, the event is written in the same transaction (see
   * TokenWrites.revokeToken); so is `audit`.
   */
  deleteClient(id: string, trail: Trail): Promise<boolean>;
  /** Replaces a client's secret hash (and the trail's `audit` line when it did). Returns false if there is no such client. */
  updateClientSecret(id: string, secretHash: string, at: number, trail: Trail): Promise<boolean>;
  /**
   * Replaces a client's redirect URIs, grant types and login-provider mark (RFC 7591 §2 client
   * metadata), with the trail's `audit` line when it did. Returns false if there is no such client.
   */
  updateClientSettings(id: string, settings: ClientSettings, trail: Trail): Promise<boolean>;
}
