import type { Config, Migration, Queryable } from '@tokenvault/platform';

type Mode = Config['PROJECTIONS'];

export const projectionModeMigrations: Migration[] = [
  {
    id: 'runtime/001_projection_mode',
    sql: `
      -- The PROJECTIONS the read models were built with: a service started in the other mode
      -- would miss events (async to inline) or apply them twice (inline to async) until a rebuild.
      CREATE TABLE projection_mode (
        only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
        projections text NOT NULL CHECK (projections IN ('inline', 'async'))
      );
      -- Events from before the modes existed were projected by the projector alone.
      INSERT INTO projection_mode (projections) SELECT 'async' WHERE EXISTS (SELECT 1 FROM es_events);
    `,
  },
];

export class ProjectionModeMismatch extends Error {
  constructor(built: Mode, configured: Mode) {
    super(
      `the read models were built with PROJECTIONS=${built}, and this process runs PROJECTIONS=${configured}: ` +
        `stop the service and run \`PROJECTIONS=${configured} npm run rebuild-read-models\` once, or start it with PROJECTIONS=${built}`,
    );
    this.name = 'ProjectionModeMismatch';
  }
}

/** Refuses to run in another mode than the read models were built with (the first start records it). */
export async function checkProjectionMode(db: Queryable, configured: Mode): Promise<void> {
  await db.query('INSERT INTO projection_mode (projections) VALUES ($1) ON CONFLICT (only_row) DO NOTHING', [
    configured,
  ]);
  const { rows } = await db.query<{ projections: Mode }>('SELECT projections FROM projection_mode');
  const built = rows[0]?.projections;
  if (built !== undefined && built !== configured) throw new ProjectionModeMismatch(built, configured);
}

/** After a rebuild: the read models are now those of this mode. */
export async function recordProjectionMode(db: Queryable, mode: Mode): Promise<void> {
  await db.query(
    `INSERT INTO projection_mode (projections) VALUES ($1)
     ON CONFLICT (only_row) DO UPDATE SET projections = excluded.projections`,
    [mode],
  );
}
