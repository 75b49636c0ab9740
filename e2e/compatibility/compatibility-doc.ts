// docs/compatibility.md, computed from three sources: the calls of Basis Theory's Node SDK
// (sdk-calls.ts), the service's OpenAPI document (a call is served when the document has its
// method and path) and the reasons for the others (unserved-calls.ts).
// e2e/compatibility-table.e2e.spec.ts fails when the file is not what this writes;
// `npm run docs:compatibility` rewrites it.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { readSdkSurface, shape, type SdkCall, type SdkSurface } from './sdk-calls.ts';
import {
  categoryMeanings,
  plannedFeatures,
  unservedCalls,
  type UnservedCategory,
  type UnservedReason,
} from './unserved-calls.ts';

export const compatibilityDocPath = fileURLToPath(new URL('../../docs/compatibility.md', import.meta.url));

/** docs/compatibility.md as the generator writes it: from the installed SDK, the checked-in document and the reasons, formatted as `prettier --write` leaves it. */
export async function generateCompatibilityDoc(): Promise<string> {
  const markdown = renderCompatibilityDoc(readSdkSurface(), readOpenApiDocument(), unservedCalls);
  const prettier = await import('prettier');
  const options = (await prettier.resolveConfig(compatibilityDocPath)) ?? {};
  return prettier.format(markdown, { ...options, filepath: compatibilityDocPath });
}

/** The part of an OpenAPI document read here. */
export interface OpenApiPaths {
  paths: Record<string, Record<string, unknown>>;
}

/** Served by an operation of the service, or not, for the reason given (none: a problem). */
export type CallStatus = { served: true; operationId: string } | { served: false; reason?: UnservedReason };

export type ClassifiedCall = SdkCall & { status: CallStatus };

export interface Classification {
  calls: ClassifiedCall[];
  /** What keeps the table from being true: each a sentence saying what to change. Empty when it holds. */
  problems: string[];
}

const httpMethods = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/** The checked-in OpenAPI document (`npm run sdk:generate` writes it from the routes). */
export function readOpenApiDocument(): OpenApiPaths {
  const path = createRequire(import.meta.url).resolve('@tokenvault/sdk/openapi.json');
  return JSON.parse(readFileSync(path, 'utf8')) as OpenApiPaths;
}

/** `POST /tokens/{}` → operationId, for every operation of the document. */
function operationsOf(document: OpenApiPaths): Map<string, string> {
  const operations = new Map<string, string>();
  for (const [path, item] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(item)) {
      if (!httpMethods.includes(method)) continue;
      const { operationId } = operation as { operationId?: string };
      operations.set(
        `${method.toUpperCase()} ${shape(path)}`,
        operationId ?? `${method.toUpperCase()} ${path}`,
      );
    }
  }
  return operations;
}

/** Whether an entry's `covers` takes in a call: the same method and path, or a path at or under it. */
function covers(reason: UnservedReason, call: SdkCall): boolean {
  const [first, second] = reason.covers.split(' ');
  if (second === undefined) {
    const prefix = shape(first!);
    const path = shape(call.path);
    return path === prefix || path.startsWith(`${prefix}/`);
  }
  return first === call.httpMethod && shape(second) === shape(call.path);
}

/** The entry that explains a call: one naming the call wins over a path, a longer path over a shorter. */
function reasonFor(call: SdkCall, reasons: UnservedReason[]): UnservedReason[] {
  const matching = reasons.filter((reason) => covers(reason, call));
  const specificity = (reason: UnservedReason) =>
    reason.covers.includes(' ') ? Number.MAX_SAFE_INTEGER : reason.covers.length;
  const best = Math.max(...matching.map(specificity));
  return matching.filter((reason) => specificity(reason) === best);
}

const callName = (call: SdkCall) => `${call.client}.${call.method} (${call.httpMethod} ${call.path})`;
const reasonsFile = 'e2e/compatibility/unserved-calls.ts';

export function classifyCalls(
  surface: SdkSurface,
  document: OpenApiPaths,
  reasons: UnservedReason[],
): Classification {
  const operations = operationsOf(document);
  const problems: string[] = [];
  const used = new Set<UnservedReason>();
  const calls = surface.calls.map((call): ClassifiedCall => {
    const operationId = operations.get(`${call.httpMethod} ${shape(call.path)}`);
    const matching = reasonFor(call, reasons);
    const reason = matching[0];
    if (matching.length > 1)
      problems.push(
        `${callName(call)} is covered by ${matching.length} entries of ${reasonsFile} alike (${matching.map((entry) => entry.covers).join(', ')}): keep one.`,
      );
    for (const entry of matching) used.add(entry);
    const anotherOperation = reason?.category === 'not planned' && reason.routeIsAnotherOperation === true;
    if (operationId !== undefined && reason !== undefined && !anotherOperation)
      problems.push(
        `${callName(call)} is served now (${operationId}), but ${reasonsFile} still gives a reason (${reason.covers}): remove it or narrow it to the calls not served.`,
      );
    if (anotherOperation && !reason.covers.includes(' '))
      problems.push(
        `${reasonsFile}: routeIsAnotherOperation is for an entry naming one call (\`POST /sessions\`), not a path (${reason.covers}).`,
      );
    if (operationId === undefined && anotherOperation)
      problems.push(
        `${reasonsFile} says ${reason.covers} is a route of the service for another operation, but the OpenAPI document has no ${call.httpMethod} ${call.path}: drop routeIsAnotherOperation.`,
      );
    if (operationId === undefined && reason === undefined)
      problems.push(
        `${callName(call)} is neither served (no ${call.httpMethod} ${shape(call.path)} in the OpenAPI document) nor given a reason: add an entry to ${reasonsFile}.`,
      );
    if (operationId === undefined || anotherOperation) return { ...call, status: { served: false, reason } };
    return { ...call, status: { served: true, operationId } };
  });
  for (const reason of reasons)
    if (!used.has(reason))
      problems.push(
        `${reasonsFile}: ${reason.covers} explains no call of the SDK now (none is under it, or a closer entry explains each): remove it.`,
      );
  return { calls, problems };
}

export interface CompatibilityCounts {
  total: number;
  served: number;
  planned: number;
  notPlanned: number;
  outOfScope: number;
  plannedByFeature: Record<string, number>;
}

export function countCalls(calls: ClassifiedCall[]): CompatibilityCounts {
  const reasons = calls.flatMap((call) => (call.status.served ? [] : [call.status.reason]));
  const inCategory = (category: UnservedCategory) =>
    reasons.filter((reason) => reason?.category === category);
  return {
    total: calls.length,
    served: calls.length - reasons.length,
    planned: inCategory('planned').length,
    notPlanned: inCategory('not planned').length,
    outOfScope: inCategory('out of scope').length,
    plannedByFeature: Object.fromEntries(
      plannedFeatures.map((feature) => [
        feature,
        reasons.filter((reason) => reason?.category === 'planned' && reason.feature === feature).length,
      ]),
    ),
  };
}

/** The Markdown of docs/compatibility.md (before Prettier aligns its tables). */
export function renderCompatibilityDoc(
  surface: SdkSurface,
  document: OpenApiPaths,
  reasons: UnservedReason[],
): string {
  const { calls, problems } = classifyCalls(surface, document, reasons);
  if (problems.length > 0)
    throw new Error(`The compatibility table does not hold:\n- ${problems.join('\n- ')}`);
  const counts = countCalls(calls);
  const lines = [
    "# Compatibility with Basis Theory's Node SDK",
    '',
    'Generated by `npm run docs:compatibility`, do not edit: from the clients of `@basis-theory/node-sdk`',
    `${surface.version} ([e2e/compatibility/sdk-calls.ts](../e2e/compatibility/sdk-calls.ts)), the service's`,
    'OpenAPI document (`packages/sdk/openapi.json`) and the reasons of',
    '[e2e/compatibility/unserved-calls.ts](../e2e/compatibility/unserved-calls.ts).',
    '`e2e/compatibility-table.e2e.spec.ts` fails when this file is not what the generator writes,',
    'when a call of the SDK has neither a route nor a reason, and when a reason names a served call.',
    '',
    ...intro,
    '## Counts',
    '',
    `Of the SDK's ${counts.total} calls:`,
    '',
    '| Calls | Count | Meaning |',
    '| --- | --- | --- |',
    `| served | ${counts.served} | the service has a route of this method and path |`,
    `| planned | ${counts.planned} | ${categoryMeanings.planned} |`,
    ...plannedFeatures.map(
      (feature) =>
        `| planned: ${feature} | ${counts.plannedByFeature[feature]} | part of the ${counts.planned} above |`,
    ),
    `| not planned | ${counts.notPlanned} | ${categoryMeanings['not planned']} |`,
    `| out of scope | ${counts.outOfScope} | ${categoryMeanings['out of scope']} |`,
    '',
    '## Calls by client',
    '',
    'The client is what the SDK user reaches: `tenants.members` is `client.tenants.members`. For a served call',
    "the last column names the service's operation (its `operationId` in the OpenAPI document).",
    '',
  ];
  const clients = [...new Set(calls.map((call) => call.client))];
  for (const client of clients) {
    lines.push(
      `### \`${client}\``,
      '',
      '| Method | Call | Served | Operation, or why not |',
      '| --- | --- | --- | --- |',
    );
    for (const call of calls.filter((entry) => entry.client === client)) {
      const cells = call.status.served
        ? ['yes', `\`${call.status.operationId}\``]
        : ['no', whyNot(call.status.reason!)];
      lines.push(`| \`${call.method}\` | \`${call.httpMethod} ${call.path}\` | ${cells.join(' | ')} |`);
    }
    lines.push('');
  }
  return lines.join('\n');
}

function whyNot(reason: UnservedReason): string {
  const category = reason.category === 'planned' ? `planned (${reason.feature})` : reason.category;
  // A table cell: a pipe would end it.
  return `${category}: ${reason.why.replaceAll('|', '\\|')}`;
}

const intro = [
  'A team moving from Basis Theory keeps its code and points the SDK at the service:',
  '',
  '```ts',
  "import { BasisTheoryClient } from '@basis-theory/node-sdk';",
  '',
  "const client = new BasisTheoryClient({ apiKey: process.env.TOKENVAULT_API_KEY, baseUrl: 'https://vault.example.com' });",
  '```',
  '',
  "The SDK sends Basis Theory's header names (`BT-API-KEY`, `BT-IDEMPOTENCY-KEY`, `BT-TRACE-ID`); the",
  'service accepts them as compatibility names of its own ([docs/api-contract.md, Compatibility names](api-contract.md#compatibility-names)).',
  '`e2e/compatibility.e2e.spec.ts` runs the SDK unpatched against the service for the proxies and',
  '`tokens.listV2`, `tokens.searchV2`, `tokens.update` and `tokenIntents`, its `apiKey` sent as `BT-API-KEY`. Where a served call behaves differently:',
  '',
  "- **Reactors run a formula.** `reactors.create` and `reactors.update` send the reactor's `code`, which",
  '  `POST /reactors` and `PUT /reactors/{id}` refuse (a 400 naming the field): create the code as a',
  '  formula (`POST /reactor-formulas`), then the reactor with its `formula.id`',
  '  ([docs/reactors.md](reactors.md)).',
  '- **Tokens** are of the types `token`, `card`, `bank`, `card_number`, `us_bank_account_number`,',
  '  `us_bank_routing_number`, `social_security_number` and `employer_id_number`, with `privacy` and the',
  '  `card` and `bank` summaries and `mask` ([docs/token-types.md](token-types.md)); `searchIndexes` and',
  '  `fingerprintExpression` are served ([docs/search.md](search.md)); `tokens.create` with',
  '  `encrypted` is a 400 naming the field ([docs/decisions.md, Tokens](decisions.md#tokens)); with `tokenIntentId` it makes',
  '  the token of a token intent, which `tokenIntents.create` made, once ([docs/token-intents.md](token-intents.md)).',
  '- **`tokenIntents.get`** answers a card’s first six digits (not eight) and no `fingerprint`, for',
  '  every key: together with a public key’s creates they would confirm a guess of the card',
  '  ([docs/token-intents.md](token-intents.md#what-a-read-shows)). `tokenIntents.create` answers as',
  '  Basis Theory’s. A conversion (`tokens.create({ tokenIntentId })`) answers summaries and',
  '  fingerprint as the key’s read decision on the new token shows them; setting `searchIndexes`,',
  '  `fingerprintExpression`, `mask` or an alias `id` on a conversion needs a key that reveals the',
  '  new token (a public key may not: [docs/security.md](security.md#one-rule-for-expressions-on-stored-data)).',
  '- **`tokens.update` by a key that may not reveal the token** (update-only, or masked) replaces',
  '  the data whole instead of merging into it: the data must be complete for its type (a 400 naming',
  '  `body.data` otherwise), and it may not set `mask`, `searchIndexes` or `fingerprintExpression`',
  '  (403). A key that reveals merges, as Basis Theory does',
  '  ([docs/security.md, Decisions](security.md#decisions)).',
  '- **Masks** are evaluated on the data’s maskable form (each field’s last four characters, a card’s',
  '  expiry, no CVC): `reveal_last` works as in Basis Theory, but a mask that shows more, such as',
  '  `reveal_first: 6` or `card_bin`, is a 400 naming `body.mask`, where Basis Theory takes any',
  '  expression ([docs/token-types.md, Masks](token-types.md#masks)).',
  '- **`tokens.update`** takes `privacy` as Basis Theory’s `UpdatePrivacy` (`impactLevel` within the',
  '  type’s floor, `restrictionPolicy`; a token in its old privacy’s container follows it, where the key',
  '  holds `token:update`) and `mask: null` (the type’s default mask)',
  '  ([docs/token-types.md, Privacy](token-types.md#privacy)).',
  '- **`tokens.searchV2`** takes the terms `data`, `metadata.<key>`, `type`, `container`, `fingerprint` and',
  '  `created_at` ranges joined by AND; anything else is a 400 naming `body.query`; each result shows what',
  '  the key’s `token:read` rule allows (data, mask or none) ([docs/search.md](search.md)). `data` and',
  '  `fingerprint` match only tokens the key’s `token:read` decision reveals, and deduplication',
  '  (`deduplicateToken`) answers an existing token only to such a key; a unique search index needs a',
  '  key that reveals every token (a 403 otherwise). Basis Theory documents none of these limits.',
  '- **Card summaries differ from Basis Theory’s `enrichments.card_details`** (`bin`, `last4`,',
  '  in Basis Theory’s token enrichments documentation): there the `bin` has the',
  '  length of the BIN table’s `bin_details.bin_length` (6 or 8) and comes with every token',
  '  operation, whoever calls it. Here `card.bin` is 8 digits for a number of 16 or more (6',
  '  otherwise) only where the caller’s `token:read` decision reveals the token, the first 6 where it',
  '  masks, and there is no summary where it redacts or the key may not read (a create’s answer keeps',
  '  the summary of the data given); the fields are `card.bin`/`card.last4`, not `enrichments`. A',
  '  token’s `fingerprint`, always in Basis Theory’s token object, is absent here where the key’s',
  '  `token:read` decision does not reveal the token',
  '  ([docs/token-types.md](token-types.md#card-and-bank-summaries)).',
  '- **Applications** take access rules as Basis Theory shapes them (`description`, `priority`,',
  '  `container`, `transform`, `permissions`) but not `conditions`, which are a 400',
  '  ([docs/applications.md, Access rules](applications.md#access-rules)).',
  '- **`tokens.listV2`** has no `fingerprint` filter ([docs/decisions.md, API](decisions.md#api)).',
  '- **`proxies.patch`** answers the proxy, which the SDK ignores',
  '  ([docs/decisions.md, The proxy and its expressions](decisions.md#the-proxy-and-its-expressions)).',
  '- **`tenants.invitations.create`** takes the role `ADMIN` only',
  '  ([docs/decisions.md, Invitations](decisions.md#invitations)).',
  '- **`tenants.invitations.create` and `resend`** need more than `tenant:invitation:create` (and',
  "  `tenant:invitation:update` for a resend), which is all Basis Theory's reference names: the",
  '  calling key must hold what the ADMIN member it invites holds (every permission tenant-wide, as a',
  '  management key) and have no expiry; a member’s session may. Otherwise a 403 naming `body.role`',
  '  ([docs/applications.md, No key grants more than it holds](applications.md#several-keys-per-application)).',
  '  A pending invitation stands only while the application or member that sent it does (410 once',
  '  it is deleted, narrowed or removed).',
  '- **`webhooks.create` and `update`** need more than `webhook:create` (`webhook:update`), which is',
  "  all Basis Theory's reference names: subscribing to an event type needs the permission that reads",
  '  its resource tenant-wide (`token:read` for `token:*`, `application:read`, `reactor:read`,',
  '  `proxy:read`), and a key that expires may not create a webhook or change its URL or events (a',
  '  403 naming `body.events` or `body.url`) ([docs/webhooks.md](webhooks.md#who-may-subscribe)).',
  '',
];
