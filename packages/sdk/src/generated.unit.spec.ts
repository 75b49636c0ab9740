import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { generatedFiles, typesOf } from './codegen.ts';

const packageDir = join(dirname(fileURLToPath(import.meta.url)), '..');
const read = (file: string) => readFileSync(join(packageDir, file), 'utf8');

// The document itself is checked against GET /openapi.json in e2e/contract.e2e.spec.ts.
describe('the generated SDK', () => {
  it('is what `npm run sdk:generate` writes from the checked-in document (regenerate when this fails)', async () => {
    const document = JSON.parse(read(generatedFiles.document)) as object;
    expect(read(generatedFiles.types)).toBe(await typesOf(document));
  });
});
