import { Args, Flags } from '@oclif/core';
import { BaseCommand } from '../cli/base-command.js';
import { COMPLETION_KINDS, completionScript, type CompletionKind } from '../cli/completion-scripts.js';
import { readProfiles } from '../cli/profiles.js';
import { stateFlag } from '../cli/flags.js';

export default class Completion extends BaseCommand<typeof Completion> {
  static override storeUse = 'read' as const;
  static override enableJsonFlag = false;
  static override summary = 'Print shell functions that complete client ids, profile names and token states';
  static override description = [
    'Completes values where `tokenctl autocomplete` completes only commands and flags: `--client`, `--profile` and `--state`, and the argument of `client show|update|delete|rotate-secret` and `profile check|remove`. Client ids are those of the store the line names with --db (else TOKENCTL_DB or the default store).',
    'Add it after the autocomplete setup (tokenctl autocomplete bash says how), so that it hands commands and flags to that one.',
  ].join('\n\n');
  static override examples = ['<%= config.bin %> <%= command.id %> bash >> ~/.bashrc', '<%= config.bin %> <%= command.id %> zsh >> ~/.zshrc'];
  static override args = {
    shell: Args.string({ description: 'The shell to print the functions for', options: ['bash', 'zsh'] }),
  };
  static override flags = {
    // What the printed functions call for the candidates; not for people.
    values: Flags.string({ description: 'Print the candidates of one kind, one per line', options: [...COMPLETION_KINDS], hidden: true }),
  };

  async run(): Promise<void> {
    const kind = this.flags.values as CompletionKind | undefined;
    if (kind !== undefined) return this.printValues(kind);
    if (this.args.shell === undefined) this.error('give the shell: tokenctl completion bash, or tokenctl completion zsh', { exit: 2 });
    process.stdout.write(completionScript(this.args.shell as 'bash' | 'zsh', this.config.bin));
  }

  /** Candidates, or nothing: a completion that fails (no store yet) must print no error into the line being edited. */
  private async printValues(kind: CompletionKind): Promise<void> {
    let values: string[] = [];
    try {
      if (kind === 'states') values = [...(stateFlag.options ?? [])];
      else if (kind === 'profiles') values = Object.keys(readProfiles(this.config.configDir));
      else values = (await (await this.engine()).listClients()).map((c) => c.client_id);
    } catch {
      values = [];
    }
    if (values.length > 0) process.stdout.write(`${values.join('\n')}\n`);
  }
}
