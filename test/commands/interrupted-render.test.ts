import { describe, expect, it } from 'vitest';
import { renderPurge } from '../../src/cli/render/purge.js';
import { renderBulkRevocation } from '../../src/cli/render/revoke.js';
import { stripAnsi } from '../helpers/cli.js';

describe('what an interrupted command prints', () => {
  it('a bulk revocation: how many of how many', () => {
    const text = renderBulkRevocation({ selector: 'client web', store: '/srv/tokens.db', matched: 35_004, revoked: 4_700, elapsed_ms: 900, dry_run: false, interrupted: true });
    expect(stripAnsi(text)).toBe('Revocation interrupted: 4,700 of 35,004 revoked (client web).\nStore: /srv/tokens.db');
  });

  it('a purge: how many of how many', () => {
    const text = renderPurge({ store: '/srv/tokens.db', older_than_ms: 0, before: Date.UTC(2026, 10, 23, 10), purgeable: 35_004, deleted: 4_700, elapsed_ms: 900, dry_run: false, interrupted: true, grants_deleted: 0, audit_older_than_ms: null, audit_before: null, audit_purgeable: 0, audit_deleted: 0 });
    expect(stripAnsi(text)).toBe('Purge interrupted: 4,700 of 35,004 deleted (expired or revoked before 2026-11-23 10:00:00 UTC).\nStore: /srv/tokens.db');
  });
});
