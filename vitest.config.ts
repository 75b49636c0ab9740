import { defineConfig } from 'vitest/config';

// Test tiers by suffix: *.unit.spec.ts (pure, no I/O), *.int.spec.ts (real PostgreSQL, Redis,
// Kafka, SMTP), *.e2e.spec.ts (HTTP against a started stack).
export default defineConfig({
  test: {
    pool: 'forks',
    projects: [
      {
        extends: true,
        test: { name: 'unit', include: ['{packages,services}/*/src/**/*.unit.spec.ts'] },
      },
      {
        extends: true,
        test: {
          name: 'int',
          include: ['{packages,services}/*/src/**/*.int.spec.ts'],
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
      {
        extends: true,
        test: {
          name: 'e2e',
          include: ['e2e/**/*.e2e.spec.ts'],
          // A real Kafka broker for the run (infra/kafka), stopped at the end.
          globalSetup: ['e2e/kafka/global-setup.ts'],
          testTimeout: 120_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
});
