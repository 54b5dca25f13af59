import { color } from './style.js';

/** `profile check`: one line for the server, one for the credentials. */
export function renderProfileCheck(r: { name: string; url: string; client_id: string; answers: boolean; credentials: 'accepted' | 'refused' | 'unknown'; problem?: string }): string {
  const server = r.answers ? color.green(`✔ ${r.url} answers`) : color.red(`✘ ${r.url} does not answer`);
  const credentials =
    r.credentials === 'accepted'
      ? color.green(`✔ it accepts the credentials of ${r.client_id}`)
      : r.credentials === 'refused'
        ? color.red(`✘ it refuses the credentials of ${r.client_id} (401): check the profile's secret`)
        : color.yellow(`? the credentials of ${r.client_id} could not be checked`);
  return [`Profile ${r.name}:`, `  ${server}`, `  ${credentials}`, ...(r.problem ? [color.dim(`  ${r.problem}`)] : [])].join('\n');
}
