// Data for the child-list scenarios of the benchmark: a parent with many children (token
// associations), created through the API.
import { postCreated } from '../../support/service-api.ts';

/** Creates `count` children under a new parent through the API (9 in 10 `token`, 1 in 10 `card`). */
export async function seedChildren(serviceUrl: string, apiKey: string, count: number): Promise<string> {
  const parent = await postCreated(serviceUrl, apiKey, '/tokens', { data: 'parent' });
  let next = 0;
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (next < count) {
        const index = next++;
        const body =
          index % 10 === 9
            ? {
                type: 'card',
                data: {
                  number: '4242424242424242',
                  expiration_month: 1 + (index % 12),
                  expiration_year: 2031,
                },
              }
            : { data: { index } };
        await postCreated(serviceUrl, apiKey, `/tokens/${parent.id}/children`, body);
      }
    }),
  );
  return parent.id;
}
