import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository's root: where a script's `tsx` resolves from. */
export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
/** The SQLite store's sources, for scripts to import as `process.env.STORE_MODULE`. */
export const SQLITE_STORE_MODULE = path.join(ROOT, 'src/store/sqlite/index.ts');

/**
 * A separate Node process running `script` (an ES module that can import the TypeScript sources),
 * with `env` added to this one's and STORE_MODULE set: a real process to race or to kill.
 */
export function spawnNode(script: string, env: Record<string, string>): ChildProcessWithoutNullStreams {
  return spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    cwd: ROOT,
    env: { ...process.env, STORE_MODULE: SQLITE_STORE_MODULE, ...env },
  });
}

/** Runs `script` as {@link spawnNode} does, to its end: its exit code and output. */
export function runNode(script: string, env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawnNode(script, env);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}
