/** What Redis holds of a run: ids, and everything else sealed under the tenant's data key. */
export interface CodeRunJob {
  tenant_id: string;
  /**
   * What the code belongs to, as whoever queued the run names it (`reactors/<id>`,
   * `proxies/<id>`): an async run's result is read back under that name only.
   */
  owner: string;
  /** Who asked: only they may read an async run's result. */
  actor_id: string;
  /**
   * AES-256-GCM (the tenant's data key), bound to the run id: a CodeRunRequest. Emptied once the
   * run is over (an async run's job stays for its result; its detokenized args need not).
   */
  sealed_request: string;
  /** The reply list of the gateway process that queued the run (run-replies.ts). */
  reply_to?: string;
}

/**
 * Sealing subjects: a request or outcome sealed for one run opens for that run only. `/` cannot
 * occur in a token id, so no token's data is ever sealed under one of these subjects.
 */
export const sealedRequestSubject = (runId: string) => `reactor-run/${runId}/request`;
export const sealedOutcomeSubject = (runId: string) => `reactor-run/${runId}/outcome`;
