// Seeding through the service's HTTP API, as a tenant's API key.

/** POSTs `body` as JSON to `path` and answers the created resource; anything but 201 throws. */
export async function postCreated<Created = { id: string }>(
  serviceUrl: string,
  apiKey: string,
  path: string,
  body: unknown,
): Promise<Created> {
  const response = await fetch(`${serviceUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'svc-api-key': apiKey },
    body: JSON.stringify(body),
  });
  if (response.status !== 201) throw new Error(`POST ${path}: ${response.status} ${await response.text()}`);
  return (await response.json()) as Created;
}
