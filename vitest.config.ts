import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

/**
 * Two parts, each runnable alone (`--project unit`, `--project integration`).
 * unit: in-process, from the TypeScript sources, no build and no PostgreSQL.
 * integration: whatever spawns bin/run.js or reads dist/ (so `npm run build` first), needs
 * PostgreSQL, a pooler or NGINX, races processes, or drives real client libraries.
 * A file is in integration if it matches INTEGRATION, and in unit otherwise, so none is left out.
 */
const INTEGRATION = [
  'test/browser/**/*.test.ts',
  'test/e2e/**/*.test.ts',
  'test/interop/**/*.test.ts',
  'test/race/**/*.test.ts',
  'test/reliability/**/*.test.ts',
  // The binary: help, start-up, stdin, terminals, signals, and in-process compared with it.
  'test/commands/completion.test.ts',
  'test/commands/help.test.ts',
  'test/commands/in-process.test.ts',
  'test/commands/load-bundle.test.ts',
  'test/commands/operator-help.test.ts',
  'test/commands/readme.test.ts',
  'test/commands/receiver-serve.test.ts',
  'test/commands/store-rule.test.ts',
  'test/commands/token-input.test.ts',
  'test/commands/unknown-command.test.ts',
  'test/events/multi-node-pg.test.ts',
  'test/events/poll-postgres.test.ts',
  'test/events/push-e2e.test.ts',
  'test/events/push-paused.test.ts',
  'test/http/serve-process.test.ts',
  'test/http/workers.test.ts',
  'test/metrics/serve-metrics.test.ts',
  'test/resource-server/e2e.test.ts',
  'test/resource-server/nginx.test.ts',
  'test/resource-server/package.test.ts',
  'test/resource-server/push.test.ts',
  'test/resource-server/standalone-package.test.ts',
  // PostgreSQL and PgBouncer, and the SQLite store shared by serve processes.
  'test/store/connection-budget.test.ts',
  'test/store/migrate.test.ts',
  'test/store/pgbouncer.test.ts',
  'test/store/postgres*.test.ts',
  'test/store/sqlite-events.test.ts',
];

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // serve drains 5 s on SIGTERM by default; the many tests that stop servers skip it (the
    // drain's own tests pass --drain), and serve processes inherit this.
    env: { TOKENCTL_DRAIN: '0s' },
    // Two files at once at least: most wait (on child processes, sockets, PostgreSQL, timeouts)
    // more than they compute, and vitest's default (cores - 1) runs them one by one on two cores.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    projects: [
      { extends: true, test: { name: 'unit', include: ['test/**/*.test.ts'], exclude: INTEGRATION } },
      { extends: true, test: { name: 'integration', include: INTEGRATION } },
    ],
  },
});
