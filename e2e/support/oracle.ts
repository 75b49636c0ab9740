/** An HTTP answer as the oracle specs compare it across a right and a wrong guess. */
export interface Answer {
  status: number;
  body: unknown;
}

/**
 * What of an answer may be compared across guesses: the status and, for a success, the body's
 * field names; for a problem, the whole body without its request id and instance (which differ
 * on every call whatever the data).
 */
export const answerShape = ({ status, body }: Answer) => {
  if (status < 400) return { status, keys: Object.keys(body as object).sort() };
  const { request_id: _requestId, instance: _instance, ...rest } = body as Record<string, unknown>;
  return { status, body: rest };
};
