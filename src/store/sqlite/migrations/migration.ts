/** One numbered schema change. Applied once, in order, and recorded in the `migrations` table. */
export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
}
