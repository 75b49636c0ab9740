import { defineConfig } from 'vitest/config';

// The compose tier (`npm run test:compose`, and last in `npm test`): the full stack of
// docker-compose.yml in containers, on images built here from Debian packages (scripts/compose.mjs).
export default defineConfig({
  test: {
    pool: 'forks',
    // One stack at a time: each is a dozen containers (Kafka's JVM among them) on the same engine.
    fileParallelism: false,
    include: ['e2e/compose/**/*.compose.spec.ts'],
    // Cold: a debootstrap base and every image (minutes); warm: seconds.
    hookTimeout: 900_000,
    testTimeout: 420_000,
  },
});
