import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Errors, type Command, type Interfaces } from '@oclif/core';

/**
 * tokenctl as oclif's root plugin, made from what this process already holds: package.json, the
 * manifest and the command classes of the bundle. oclif's own Plugin finds and reads the same
 * files asynchronously, and sorts the command ids with `localeCompare`, whose first call builds
 * an ICU collator: several milliseconds of every start, for an order that only help displays.
 * Given to `Config.load` as its plugins (see main/cli.ts), it stands for every plugin: the core
 * plugins of package.json (autocomplete) and any user plugin then stay unloaded.
 *
 * It covers what tokenctl uses: explicit command discovery, an oclif.manifest.json of the same
 * version, flat topics, no hooks. For anything else `from()` gives nothing and oclif does it all.
 */
export class RootPlugin implements Interfaces.Plugin {
  readonly _base: string;
  readonly alias: string;
  readonly commandIDs: string[];
  readonly commands: Command.Loadable[];
  readonly commandsDir = undefined;
  readonly hasManifest = true;
  readonly hooks = {};
  readonly isRoot = true;
  readonly moduleType: 'commonjs' | 'module';
  readonly name: string;
  readonly options: Interfaces.Options;
  readonly type = 'core';
  readonly valid = true;
  readonly version: string;

  /** The root plugin of the package at `root`, or undefined where it does not cover the package. */
  static from(root: string, pjson: Interfaces.PJSON, classes: Record<string, Command.Class>): RootPlugin | undefined {
    const { commands, hooks, topics = {} } = pjson.oclif;
    const covered =
      typeof commands === 'object' &&
      commands.strategy === 'explicit' &&
      Object.keys(hooks ?? {}).length === 0 &&
      Object.values(topics).every((topic) => !topic.subtopics);
    if (!covered) return undefined;
    let manifest: Interfaces.Manifest;
    try {
      manifest = JSON.parse(readFileSync(join(root, 'oclif.manifest.json'), 'utf8')) as Interfaces.Manifest;
    } catch {
      return undefined; // no manifest (a development build): oclif makes one from the classes
    }
    // A manifest of another version is left to oclif, which may warn and ignore it.
    if (manifest.version !== pjson.version) return undefined;
    return new RootPlugin(root, pjson, manifest, classes);
  }

  private constructor(
    readonly root: string,
    readonly pjson: Interfaces.PJSON,
    manifest: Interfaces.Manifest,
    private readonly classes: Record<string, Command.Class>,
  ) {
    this.name = pjson.name;
    this.alias = pjson.name;
    this.version = pjson.version;
    this._base = `${pjson.name}@${pjson.version}`;
    this.moduleType = pjson.type === 'module' ? 'module' : 'commonjs';
    this.options = { root, isRoot: true, pjson };
    this.commandIDs = Object.keys(manifest.commands);
    this.commands = Object.entries(manifest.commands)
      .map(([id, cached]) => ({ ...cached, load: async () => this.findCommand(id, { must: true }), pluginAlias: this.alias, pluginType: this.type }))
      // Command ids are lower-case ASCII: code-point order is the order localeCompare gives them.
      .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  get topics(): Interfaces.Topic[] {
    return Object.entries(this.pjson.oclif.topics ?? {}).map(([name, topic]) => ({ ...topic, name }));
  }

  async load(): Promise<void> {
    // Everything was read in the constructor.
  }

  findCommand(id: string, opts: { must: true }): Promise<Command.Class>;
  findCommand(id: string, opts?: { must: boolean }): Promise<Command.Class> | undefined;
  findCommand(id: string, opts?: { must: boolean }): Promise<Command.Class | undefined> | undefined {
    return this.commandClass(id, opts?.must ?? false);
  }

  private async commandClass(id: string, must: boolean): Promise<Command.Class | undefined> {
    const command = Object.hasOwn(this.classes, id) ? this.classes[id] : undefined;
    if (!command) return must ? Errors.error(`command ${id} not found`) : undefined;
    // As oclif's Plugin does: a command class knows its id and its plugin.
    command.id = id;
    command.plugin = this;
    return command;
  }
}
