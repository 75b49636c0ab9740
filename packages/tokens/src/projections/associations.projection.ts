import type { PoolClient } from '@tokenvault/platform';

export interface AssociationRow {
  tenant_id: string;
  parent_id: string;
  child_id: string;
  /** The child's own (immutable) fields that child lists filter on. */
  type: string;
  containers: string[];
  expires_at?: string;
  associated_at: string;
}

export async function insertAssociations(tx: PoolClient, rows: AssociationRow[]): Promise<void> {
  if (rows.length === 0) return;
  await tx.query(
    `INSERT INTO token_associations (tenant_id, parent_id, child_id, type, containers, expires_at, associated_at)
     SELECT tenant_id, parent_id, child_id, type, containers, expires_at, associated_at
     FROM jsonb_to_recordset($1::jsonb) AS r(tenant_id uuid, parent_id text, child_id text, type text,
                                             containers text[], expires_at timestamptz, associated_at timestamptz)
     ON CONFLICT DO NOTHING`,
    [JSON.stringify(rows)],
  );
}

export async function deleteAssociations(
  tx: PoolClient,
  rows: { tenant_id: string; parent_id: string; child_id: string }[],
): Promise<void> {
  await tx.query(
    `DELETE FROM token_associations a
     USING jsonb_to_recordset($1::jsonb) AS r(tenant_id uuid, parent_id text, child_id text)
     WHERE a.tenant_id = r.tenant_id AND a.parent_id = r.parent_id AND a.child_id = r.child_id`,
    [JSON.stringify(rows)],
  );
}

/** Every association a deleted token was part of, as parent and as child. */
export async function deleteAssociationsOf(
  tx: PoolClient,
  tokens: { tenant_id: string; token_id: string }[],
) {
  await tx.query(
    `DELETE FROM token_associations a
     USING jsonb_to_recordset($1::jsonb) AS r(tenant_id uuid, token_id text)
     WHERE a.tenant_id = r.tenant_id AND (a.parent_id = r.token_id OR a.child_id = r.token_id)`,
    [JSON.stringify(tokens)],
  );
}
