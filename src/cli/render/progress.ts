/**
 * One line of the progress bar of long destructive work (purge, bulk revocation), redrawn with
 * `\r` on a terminal: `[#####-----]  50%  500/1000 deleted`.
 */
export function progressBar(done: number, total: number, verb: string, width = 30): string {
  const ratio = total <= 0 ? 1 : Math.min(1, done / total);
  const filled = Math.round(ratio * width);
  const percent = `${Math.floor(ratio * 100)}%`.padStart(4);
  return `[${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${percent}  ${done}/${total} ${verb}`;
}
