import type { AuditEntry } from '../audit.js';

/*
 * The audit line of a change, as PostgreSQL writes it: inside the statement of the change it
 * tells of (docs/decisions.md, "One trail per change"), through the one INSERT below; and,
 * after it, the trail's reads.
 */

/** {@link auditParams} and whether to write it ($n+6): all placeholders for none. */
export function optionalAudit(audit: AuditEntry | undefined): unknown[] {
  return audit === undefined ? [0, '', '', '', 0, '', false] : [...auditParams(audit), true];
}

/** One audit line's values in SQL: parameters, or expressions over the statement's own rows. */
export interface AuditValues {
  at: string;
  actor: string;
  action: string;
  target: string;
  count: string;
  detail: string;
}

/** The values of {@link auditParams} (or {@link optionalAudit}) from $n; `count` replaces $n+4's. */
export function auditAt(n: number, count = `$${n + 4}`): AuditValues {
  return { at: `$${n}`, actor: `$${n + 1}`, action: `$${n + 2}`, target: `$${n + 3}`, count, detail: `$${n + 5}` };
}

/** Five parameters from $n (at, actor, action, target, detail: {@link countedAuditParams}), the count an expression of the statement's. */
export function countedAuditAt(n: number, count: string): AuditValues {
  return { at: `$${n}`, actor: `$${n + 1}`, action: `$${n + 2}`, target: `$${n + 3}`, count, detail: `$${n + 4}` };
}

/**
 * The one spelling of an audit line's INSERT, written inside the statement of the change it tells
 * of (the change and its line commit together): its values, then what follows them (FROM, WHERE,
 * HAVING, ORDER BY: when, and for which rows, it is written).
 */
export function insertAudit(values: AuditValues, rest = ''): string {
  const v = values;
  return `INSERT INTO audit (at, actor, action, target, count, detail) SELECT ${v.at}, ${v.actor}, ${v.action}, ${v.target}, ${v.count}, ${v.detail}${rest === '' ? '' : ` ${rest}`}`;
}

/** {@link countedAuditAt}'s five parameters and whether to write the line (its sixth): placeholders for none. */
export function countedAuditParams(audit: AuditEntry | undefined): unknown[] {
  return audit === undefined ? [0, '', '', '', '', false] : [audit.at, audit.actor, audit.action, audit.target, audit.detail, true];
}

/** One audit line, $1–$6 from {@link auditParams}. */
export const INSERT_AUDIT = insertAudit(auditAt(1));

/** The parameters of {@link INSERT_AUDIT}. */
export function auditParams(e: AuditEntry): unknown[] {
  return [e.at, e.actor, e.action, e.target, e.count, e.detail];
}

/** Newest first; `target` is space-separated words, and the filters match whole words. */
/** The audit filters (AuditFilter) as $1–$4: since, jti, client id, actions to leave out. */
const AUDIT_CONDITIONS = `($1::bigint IS NULL OR at >= $1) AND ($2::text IS NULL OR $2 = ANY (string_to_array(target, ' ')))
    AND ($3::text IS NULL OR actor = $3 OR 'client:' || $3 = ANY (string_to_array(target, ' ')))
    AND ($4::text[] IS NULL OR NOT (action = ANY ($4)))`;

/** $5: only ids below it (the next page), $6: the limit. */
export const LIST_AUDIT = `SELECT id, at, actor, action, target, count, detail FROM audit
  WHERE ${AUDIT_CONDITIONS} AND ($5::bigint IS NULL OR id < $5)
  ORDER BY id DESC LIMIT $6`;

export const COUNT_AUDIT = `SELECT count(*)::int AS n FROM audit WHERE ${AUDIT_CONDITIONS}`;
