// `npm run sdk:generate`: writes packages/sdk/openapi.json (the document GET /openapi.json serves,
// built by the same function from the same route definitions) and the types generated from it
// (packages/sdk/src/generated/schema.ts), and docs/api.http (one request per operation). Needs PostgreSQL and Redis as the tests do (the runtime
// is created on a throw-away database, never served); its servers entry is the default PUBLIC_URL.
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '@tokenvault/platform';
import { createTestDatabase } from '@tokenvault/platform/testing';
import { allMigrations, apiDocument, createRuntime } from '@tokenvault/runtime';
import { documentText, generatedFiles, typesOf } from './codegen.ts';
import { httpRequestsFile, httpRequestsOf } from './http-requests.ts';

const packageDir = join(dirname(fileURLToPath(import.meta.url)), '..');
const database = await createTestDatabase(allMigrations);
try {
  const config = loadConfig({
    NODE_ENV: 'test',
    DATABASE_URL: database.url,
    MASTER_KEY: randomBytes(32).toString('base64'),
    LOG_LEVEL: 'warn',
    QUEUE_PREFIX: `tv-sdk-generate-${database.name}`,
  });
  const runtime = await createRuntime(config);
  try {
    const document = apiDocument(runtime);
    writeFileSync(join(packageDir, generatedFiles.document), documentText(document));
    writeFileSync(join(packageDir, generatedFiles.types), await typesOf(document));
    writeFileSync(join(packageDir, httpRequestsFile), httpRequestsOf(document));
  } finally {
    await runtime.close();
  }
} finally {
  await database.drop();
}
console.log(
  `wrote ${generatedFiles.document} and ${generatedFiles.types} in packages/sdk, and docs/api.http`,
);
