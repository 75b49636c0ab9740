// Bulk calls beside single-token creates: POST /tokenize with 100 token requests per call (one
// append of 100 tokens) and POST /detokenize with 100 expressions per call (one read of 100
// tokens), each row noting tokens per second next to POST /tokens' in the same run.
import { measureHttp, type Measured } from '../support/measure.ts';
import type { Row } from '../support/report.ts';
import { serviceCost, type Stack } from '../support/stack.ts';

const perCall = 100;

const tokensPerSecond = (row: Row) => (row.rate ?? 0) * perCall;

export async function measureBulk(
  stack: Stack,
  postTokens: Row,
  tokenIds: readonly string[],
): Promise<{ tokenize: Measured; detokenize?: Measured }> {
  const single = `POST /tokens: ${(postTokens.rate ?? 0).toFixed(0)} tokens/s`;
  const tokenizeBody = JSON.stringify({
    customers: Array.from({ length: perCall }, (_, index) => ({
      id: `c-${index}`,
      name: { type: 'token', data: { name: 'Ada Lovelace', email: `ada-${index}@example.test` } },
    })),
  });
  const tokenize = await measureHttp(
    {
      name: `POST /tokenize (${perCall} tokens per call)`,
      url: `${stack.serviceUrl}/tokenize`,
      method: 'POST',
      headers: stack.auth,
      body: tokenizeBody,
    },
    // Its transactions, CPU and rows per call: the cost table (support/request-cost.ts).
    { cost: serviceCost(stack) },
  );
  const tokenizeRow = tokenize.row;
  tokenizeRow.note = [`${tokensPerSecond(tokenizeRow).toFixed(0)} tokens/s (${single})`, tokenizeRow.note]
    .filter(Boolean)
    .join('; ');
  const ids = tokenIds.slice(0, perCall);
  if (ids.length < perCall) return { tokenize };
  const detokenizeBody = JSON.stringify(
    Object.fromEntries(ids.map((id, index) => [`v${index}`, `{{ ${id} }}`])),
  );
  const detokenize = await measureHttp(
    {
      name: `POST /detokenize (${perCall} expressions per call)`,
      url: `${stack.serviceUrl}/detokenize`,
      method: 'POST',
      headers: stack.auth,
      body: detokenizeBody,
    },
    { cost: serviceCost(stack) },
  );
  detokenize.row.note = [`${tokensPerSecond(detokenize.row).toFixed(0)} tokens/s`, detokenize.row.note]
    .filter(Boolean)
    .join('; ');
  return { tokenize, detokenize };
}
