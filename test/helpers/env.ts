/**
 * The variables a test's tokenctl must not inherit from the shell that runs the suite: every
 * TOKENCTL_ setting (a developer's own TOKENCTL_DB, TOKENCTL_ISSUER or TOKENCTL_PORT would otherwise
 * steer the command under test), but not the suite's own: its TOKENCTL_TEST_ switches and the
 * drain that vitest.config.ts sets for every test; and the Node and colour settings that change what
 * a child prints.
 */
const SUITE_SETTINGS = new Set(['TOKENCTL_DRAIN']);

export function inheritedSettings(env: NodeJS.ProcessEnv = process.env): string[] {
  const keys = Object.keys(env).filter((key) => key.startsWith('TOKENCTL_') && !key.startsWith('TOKENCTL_TEST_') && !SUITE_SETTINGS.has(key));
  return [...keys, 'FORCE_COLOR', 'NODE_OPTIONS'];
}

/** A copy of `env` without the settings above. */
export function withoutInheritedSettings(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const copy: NodeJS.ProcessEnv = { ...env };
  for (const key of inheritedSettings(env)) delete copy[key];
  return copy;
}
