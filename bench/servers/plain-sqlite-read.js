/**
 * The CLI baseline: the least a command-line introspection must do — start Node, open the
 * SQLite file with better-sqlite3, read one token row by its digest, print it as JSON.
 *
 * Usage: node bench/servers/plain-sqlite-read.js <db-file> <token>
 */
import { createHash } from 'node:crypto';
import Database from 'better-sqlite3';

const [file, token] = process.argv.slice(2);
if (!file || !token) throw new Error('usage: plain-sqlite-read.js <db-file> <token>');
const db = new Database(file, { readonly: true, fileMustExist: true });
const digest = createHash('sha256').update(token, 'utf8').digest('base64url');
const row = db.prepare('SELECT * FROM tokens WHERE digest = ?').get(digest);
db.close();
process.stdout.write(JSON.stringify(row ?? { active: false }) + '\n');
process.exitCode = row ? 0 : 3;
