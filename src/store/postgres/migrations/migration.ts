/**
 * One numbered schema change. Applied once, in order, and recorded in the `migrations` table.
 *
 * Every change says whether a node of an older release still runs on the schema it leaves
 * (rolling upgrades, docs/scale-out.md): `'expand'` adds only what older nodes do not see (a
 * table, a nullable column or one with a default, an index, a function they do not call), so
 * `tokenctl migrate` may apply it while they serve; a contract step removes or changes what
 * older nodes use, and names the oldest schema version whose nodes run on it (`{ contract:
 * { nodesFrom: N } }`: N is the release that stopped using what it removes). A node refuses a
 * store whose contract steps need a newer node than itself (../schema.ts).
 */
export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
  readonly change: 'expand' | { readonly contract: { readonly nodesFrom: number } };
}

/**
 * The steps made before nodes read the `change` of a step: a node of those releases runs only on
 * a store whose `schema_version` is exactly its own newest version, so each of them counts as a
 * contract step that needs its own version.
 */
export const BEFORE_ROLLING_UPGRADES = (version: number) => ({ contract: { nodesFrom: version } }) as const;

/**
 * The table whose presence marks a schema as a tokenctl store (the SQLite store's
 * `application_id`): `application = tokenctl`, and `schema_version`, the last migration applied.
 */
export const META_TABLE = 'tokenctl_meta';
export const APPLICATION = 'tokenctl';
