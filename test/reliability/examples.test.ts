import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { copyFileSync, existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parseDuration } from '../../src/cli/duration.js';
import Purge from '../../src/commands/purge.js';
import Serve from '../../src/commands/serve.js';
import { tempDir } from '../helpers/load.js';

/**
 * The deployment examples (examples/systemd, examples/kubernetes) say only what tokenctl
 * understands: every flag in a command line is one of that command's, every TOKENCTL_ variable
 * names one of its flags (contract 6) with a value the flag takes, the probes are the health
 * routes, and the stop timeouts exceed the drain plus the 10 s given to requests in flight.
 * systemd-analyze verify checks the units themselves where it is installed.
 */

/** js-yaml (a devDependency; no types of its own, so required untyped): only its loadAll is used. */
const yaml = createRequire(import.meta.url)('js-yaml') as { loadAll(text: string): unknown[] };

interface Container {
  image: string;
  args: string[];
  env?: { name: string; value?: string }[];
  envFrom?: { secretRef: { name: string } }[];
  ports?: { name: string; containerPort: number }[];
  readinessProbe: { httpGet: { path: string; port: string }; timeoutSeconds: number };
  livenessProbe: { httpGet: { path: string; port: string } };
}
interface PodSpec {
  terminationGracePeriodSeconds?: number;
  containers: Container[];
}
interface Doc {
  kind: string;
  metadata: { name: string };
  stringData?: Record<string, string>;
  spec?: { template?: { spec: PodSpec }; jobTemplate?: { spec: { template: { spec: PodSpec } } } };
}

const ROOT = new URL('../..', import.meta.url).pathname;
const EXAMPLES = join(ROOT, 'examples');
const IN_FLIGHT_GRACE_S = 10;

type FlagDef = { env?: string; type?: string; options?: readonly string[]; helpValue?: string | string[] };
const COMMANDS: Record<string, Record<string, FlagDef>> = {
  serve: { ...Serve.baseFlags, ...Serve.flags } as Record<string, FlagDef>,
  purge: { ...Purge.baseFlags, ...Purge.flags } as Record<string, FlagDef>,
};

/** The command's flag `--name`, or its flag read from the variable `name`. */
function flagOf(command: string, name: string): FlagDef | undefined {
  const flags = COMMANDS[command]!;
  if (name.startsWith('--')) return flags[name.slice(2).split('=')[0]!];
  return Object.values(flags).find((f) => f.env === name);
}

/** Fails unless `value` is one the flag takes. */
function expectValue(command: string, variable: string, value: string): void {
  const flag = flagOf(command, variable);
  expect(flag, `${command}: ${variable} names no flag`).toBeDefined();
  if (flag!.type === 'boolean') expect(['true', 'false', '1', '0'], variable).toContain(value);
  else if (flag!.options) expect(flag!.options, variable).toContain(value);
  else if (String(flag!.helpValue ?? '').includes('<duration>')) expect(() => parseDuration(value), variable).not.toThrow();
}

function expectArgs(command: string, args: readonly string[]): void {
  for (const arg of args) if (arg.startsWith('--')) expect(flagOf(command, arg), `${command} ${arg}`).toBeDefined();
}

const seconds = (duration: string): number => parseDuration(duration) / 1000;

describe('examples/kubernetes', () => {
  const docs = yaml.loadAll(readFileSync(join(EXAMPLES, 'kubernetes/tokenctl.yaml'), 'utf8')) as Doc[];
  const secrets = new Map(docs.filter((d) => d.kind === 'Secret').map((d) => [d.metadata.name, d.stringData ?? {}]));
  const pods = docs.flatMap((d) => {
    const spec = d.spec?.jobTemplate?.spec.template.spec ?? d.spec?.template?.spec;
    return spec ? [{ kind: d.kind, spec }] : [];
  });
  const tokenctl = pods.flatMap((p) => p.spec.containers.filter((c) => c.image.includes('/tokenctl:')).map((c) => ({ pod: p, c })));

  it('parses, and runs serve and purge from the tokenctl image', () => {
    expect(docs.map((d) => d.kind)).toEqual(expect.arrayContaining(['Deployment', 'Service', 'Secret', 'CronJob', 'PodDisruptionBudget']));
    expect(tokenctl.map(({ c }) => c.args[0]).sort()).toEqual(['purge', 'serve']);
  });

  it('every flag in args and every TOKENCTL_ variable (env and the Secrets it reads) is one of its command, with a value it takes', () => {
    for (const { c } of tokenctl) {
      const command = c.args[0]!;
      expectArgs(command, c.args.slice(1));
      for (const e of c.env ?? []) if (e.name.startsWith('TOKENCTL_') && e.value !== undefined) expectValue(command, e.name, e.value);
      for (const from of c.envFrom ?? []) {
        const secret = secrets.get(from.secretRef.name);
        expect(secret, from.secretRef.name).toBeDefined();
        for (const [name, value] of Object.entries(secret!)) expectValue(command, name, value);
      }
    }
  });

  it('serve: readiness on /health/ready, liveness on /health/live, at its port; the grace period covers the drain', () => {
    const { pod, c } = tokenctl.find(({ c }) => c.args[0] === 'serve')!;
    const env = new Map((c.env ?? []).map((e) => [e.name, e.value]));
    const http = c.ports!.find((p) => p.name === c.readinessProbe.httpGet.port)!;
    expect(String(http.containerPort)).toBe(env.get('TOKENCTL_PORT'));
    expect(c.readinessProbe.httpGet.path).toBe('/health/ready');
    expect(c.livenessProbe.httpGet.path).toBe('/health/live');
    expect(c.livenessProbe.httpGet.port).toBe(http.name);
    // A readiness probe must wait longer than the store's own timeout, or it fails first.
    expect(c.readinessProbe.timeoutSeconds).toBeGreaterThan(seconds(env.get('TOKENCTL_DB_TIMEOUT') ?? '5s'));
    expect(pod.spec.terminationGracePeriodSeconds).toBeGreaterThan(seconds(env.get('TOKENCTL_DRAIN') ?? '5s') + IN_FLIGHT_GRACE_S);
    const metrics = c.ports!.find((p) => p.name === 'metrics')!;
    expect(String(metrics.containerPort)).toBe(env.get('TOKENCTL_METRICS_PORT'));
  });
});

describe('examples/systemd', () => {
  const dir = join(EXAMPLES, 'systemd');
  const units = readdirSync(dir);
  /** `Key=value` lines of a unit, comments and sections left out. */
  const lines = (file: string): [string, string][] =>
    readFileSync(join(dir, file), 'utf8')
      .split('\n')
      .filter((l) => /^[A-Za-z]+=/.test(l))
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]);

  it('holds the service, and the purge service with its timer', () => {
    expect(units.sort()).toEqual(['tokenctl-purge.service', 'tokenctl-purge.timer', 'tokenctl.service']);
  });

  it.each(['tokenctl.service', 'tokenctl-purge.service'])('%s: every flag and TOKENCTL_ variable is one of its command, with a value it takes', (unit) => {
    const keys = lines(unit);
    const exec = keys.find(([k]) => k === 'ExecStart')![1].split(/\s+/);
    expect(exec[0]).toBe('/usr/local/bin/tokenctl');
    const command = exec[1]!;
    expectArgs(command, exec.slice(2));
    const variables = keys.filter(([k]) => k === 'Environment').map(([, v]) => v.split('=') as [string, string]);
    for (const [name, value] of variables) if (name.startsWith('TOKENCTL_')) expectValue(command, name, value);
    if (command === 'serve') {
      const drain = variables.find(([n]) => n === 'TOKENCTL_DRAIN')?.[1] ?? '5s';
      expect(Number(keys.find(([k]) => k === 'TimeoutStopSec')![1])).toBeGreaterThan(seconds(drain) + IN_FLIGHT_GRACE_S);
      expect(variables.length).toBeGreaterThan(5);
    }
  });

  const analyze = ['/usr/bin/systemd-analyze', '/bin/systemd-analyze'].find((p) => existsSync(p));
  it.skipIf(!analyze)('systemd-analyze verify accepts the units, with no warning about them', async () => {
    // verify wants ExecStart to exist: the units as they are, run by this checkout's bin/run.js.
    const tmp = tempDir('tokenctl-units-');
    try {
      for (const unit of units) {
        copyFileSync(join(dir, unit), join(tmp.dir, unit));
        writeFileSync(join(tmp.dir, unit), readFileSync(join(dir, unit), 'utf8').replaceAll('/usr/local/bin/tokenctl', join(ROOT, 'bin/run.js')));
      }
      const { stderr } = await promisify(execFile)(analyze!, ['verify', ...units.map((u) => join(tmp.dir, u))]);
      const ours = stderr.split('\n').filter((l) => units.some((u) => l.includes(u)));
      expect(ours).toEqual([]);
    } finally {
      tmp.cleanup();
    }
  });
  if (!analyze) it.skip('systemd-analyze verify: not installed here, skipped', () => undefined);
});
