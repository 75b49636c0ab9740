// Data for the child-list scenarios of the benchmark: a parent with many children (token
// associations), created through the API.

/** Creates `count` children under a new parent through the API (9 in 10 `token`, 1 in 10 `card`). */
export async function seedChildren(serviceUrl: string, apiKey: string, count: number): Promise<string> {
  const headers = { 'content-type': 'application/json', 'svc-api-key': apiKey };
  const parent = (await (
    await fetch(`${serviceUrl}/tokens`, { method: 'POST', headers, body: JSON.stringify({ data: 'parent' }) })
  ).json()) as { id: string };
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
        const response = await fetch(`${serviceUrl}/tokens/${parent.id}/children`, {
          method: 'POST',
          headers,
          body: JSON.stringify(body),
        });
        if (response.status !== 201)
          throw new Error(`child ${index}: ${response.status} ${await response.text()}`);
      }
    }),
  );
  return parent.id;
}
