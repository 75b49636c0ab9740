// `npm run docs:compatibility`: writes docs/compatibility.md (see compatibility-doc.ts). It stops,
// writing nothing, when a call of the SDK has neither a route nor a reason or a reason is stale.
import { writeFileSync } from 'node:fs';
import { compatibilityDocPath, generateCompatibilityDoc } from './compatibility-doc.ts';

writeFileSync(compatibilityDocPath, await generateCompatibilityDoc());
process.stdout.write(`wrote ${compatibilityDocPath}\n`);
