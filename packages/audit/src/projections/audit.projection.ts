import type { Projection } from '@tokenvault/cqrs';
import { logEntriesOf, loggedEventTypes, type LoggedEvent } from '../mappings.ts';

/** Rows an event may have in the log (a batch of reads names at most 128 tokens: maxTokensPerReadBatch). */
export const rowsPerEvent = 128;

/** A row's place: its event's global position, then its index among the event's rows. */
const logPosition = (globalPosition: string, index: number) => {
  if (index >= rowsPerEvent) throw new Error(`an event has more than ${rowsPerEvent} log rows`);
  return (BigInt(globalPosition) * BigInt(rowsPerEvent) + BigInt(index)).toString();
};

/**
 * One log row per event (one per token for a read of many), written for the whole batch in one statement. A deleted tenant's log
 * goes with its other read models; the deletion itself is the one row left.
 */
export const auditProjection: Projection<LoggedEvent> = {
  name: 'audit',
  tables: ['audit_logs'],
  handles: loggedEventTypes,
  async apply(events, tx) {
    const rows = events.flatMap((event) =>
      logEntriesOf(event).map(({ actedBy, ...entry }, index) => ({
        // A batch of reads names each read's tenant and reader: its row is that tenant's alone.
        tenant_id: actedBy?.tenant_id ?? event.metadata.tenant_id,
        // Milliseconds, as the API shows them: a row's created_at given back as a filter matches it.
        created_at: event.created_at.toISOString(),
        position: logPosition(event.position.prepare, index),
        event_id: event.event_id,
        actor_id: actedBy?.actor_id ?? event.metadata.actor_id ?? null,
        actor_type: actedBy?.actor_type ?? event.metadata.actor_type ?? null,
        ...entry,
      })),
    );
    await tx.query(
      `INSERT INTO audit_logs (tenant_id, created_at, position, event_id, actor_id, actor_type,
                               entity_type, entity_id, operation, message)
       SELECT tenant_id, created_at, position, event_id, actor_id, actor_type, entity_type, entity_id, operation, message
       FROM jsonb_to_recordset($1::jsonb) AS r(
         tenant_id uuid, created_at timestamptz, position bigint, event_id uuid, actor_id uuid, actor_type text,
         entity_type text, entity_id text, operation text, message text)
       ON CONFLICT DO NOTHING`,
      [JSON.stringify(rows)],
    );
    for (const event of events) {
      if (event.type !== 'TenantDeleted') continue;
      await tx.query('DELETE FROM audit_logs WHERE tenant_id = $1 AND event_id <> $2', [
        event.metadata.tenant_id,
        event.event_id,
      ]);
    }
  },
};
