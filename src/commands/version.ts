import { BaseCommand } from '../cli/base-command.js';

export interface VersionResult {
  version: string;
  node: string;
  platform: string;
}

export default class Version extends BaseCommand<typeof Version> {
  // No --db: it opens no store.
  static override baseFlags = {} as typeof BaseCommand.baseFlags;
  static override summary = 'Show the tokenctl version (also: tokenctl -v, tokenctl --version)';
  static override examples = ['<%= config.bin %> <%= command.id %>', '<%= config.bin %> <%= command.id %> --json'];

  async run(): Promise<VersionResult> {
    const result = { version: this.config.version, node: process.version, platform: `${process.platform}-${process.arch}` };
    if (!this.jsonEnabled()) this.log(`tokenctl ${result.version} (Node.js ${result.node}, ${result.platform})`);
    return result;
  }
}
