import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { generatedFiles, typesOf } from './codegen.ts';
import { httpRequestsFile, httpRequestsOf } from './http-requests.ts';

const packageDir = join(dirname(fileURLToPath(import.meta.url)), '..');
const read = (file: string) => readFileSync(join(packageDir, file), 'utf8');

// The document itself is checked against GET /openapi.json in e2e/contract.e2e.spec.ts.
describe('the generated SDK', () => {
  it('is what `npm run sdk:generate` writes from the checked-in document (regenerate when this fails)', async () => {
    const document = JSON.parse(read(generatedFiles.document)) as object;
    expect(read(generatedFiles.types)).toBe(await typesOf(document));
  });

  it('has docs/api.http as `npm run sdk:generate` writes it (regenerate when this fails)', () => {
    const document = JSON.parse(read(generatedFiles.document)) as object;
    expect(read(httpRequestsFile)).toBe(httpRequestsOf(document));
  });

  it('has one request in docs/api.http per operation, each with its example body', () => {
    const document = JSON.parse(read(generatedFiles.document)) as {
      paths: Record<string, Record<string, { operationId?: string; requestBody?: unknown }>>;
    };
    const operations = Object.values(document.paths).flatMap((item) =>
      Object.values(item).filter((operation) => operation.operationId),
    );
    const text = read(httpRequestsFile);
    expect(text.match(/^### /gm)).toHaveLength(operations.length);
    expect(text).toContain('### createToken: ');
    expect(text).toContain('"number": "4242424242424242"');
    expect(text).toMatch(/^@base = /m);
    expect(text).toMatch(/^@key = /m);
  });
});
