import type { Projection } from '@tokenvault/cqrs';
import type { RecordedEvent } from '@tokenvault/eventstore';
import type { TokenEvent } from '../domain/token.ts';

export const tokensProjection: Projection = {
  name: 'tokens',
  tables: ['tokens'],
  handles: ['TokenCreated', 'TokenDeleted'] satisfies TokenEvent['type'][],
  async apply(recorded, tx) {
    const event = recorded as RecordedEvent & TokenEvent;
    switch (event.type) {
      case 'TokenCreated': {
        const d = event.data;
        await tx.query(
          `INSERT INTO tokens (tenant_id, id, type, data_ciphertext, containers, metadata, fingerprint,
                               expires_at, created_by, created_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT DO NOTHING`,
          [
            d.tenant_id,
            d.token_id,
            d.type,
            d.data_ciphertext,
            d.containers,
            JSON.stringify(d.metadata),
            d.fingerprint,
            d.expires_at ?? null,
            d.created_by,
            d.created_at,
          ],
        );
        return;
      }
      case 'TokenDeleted':
        await tx.query('DELETE FROM tokens WHERE tenant_id = $1 AND id = $2', [event.data.tenant_id, event.data.token_id]);
        return;
    }
  },
};
