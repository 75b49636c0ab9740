import { withTenant, type Pool } from '@tokenvault/platform';
import { tokenTypes, type TokenType } from '@tokenvault/contracts';

export interface UsageReport {
  token_report: {
    metrics_by_type: Record<string, { count: number; last_created_at?: string }>;
    included_monthly_active_tokens: number;
    monthly_active_tokens: number;
    daily_created_by_type: { date: string; counts: Record<string, number> }[];
  };
}

/** The days of the created-tokens series: today (UTC) and the 29 before it. */
const dailySeriesDays = 30;

/** Every day of the series, oldest first, each with every token type (0 where none were created). */
function dailySeries(now: Date, rows: { day: string; type: string; created: number }[]) {
  const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  const series = Array.from({ length: dailySeriesDays }, (_, index) => {
    const date = new Date(today - (dailySeriesDays - 1 - index) * 86_400_000).toISOString().slice(0, 10);
    return {
      date,
      counts: Object.fromEntries(tokenTypes.map((type) => [type, 0])),
    };
  });
  const byDate = new Map(series.map((day) => [day.date, day]));
  for (const row of rows) {
    const day = byDate.get(row.day);
    if (day) day.counts[row.type] = Number(row.created);
  }
  return series;
}

/** Reads the usage the projection keeps: no counting of token rows per request. */
export async function usageReport(
  appPool: Pool,
  tenantId: string,
  includedMonthlyActiveTokens: number,
  /** The report's month is the month of this instant (UTC). */
  now: Date,
): Promise<UsageReport> {
  return withTenant(appPool, tenantId, async (client) => {
    const types = await client.query<{ type: TokenType; count: number; last_created_at: Date | null }>(
      'SELECT type, count, last_created_at FROM token_type_usage WHERE tenant_id = $1',
      [tenantId],
    );
    const month = await client.query<{ active_tokens: number }>(
      `SELECT active_tokens FROM token_monthly_usage
       WHERE tenant_id = $1 AND month = date_trunc('month', $2::timestamptz AT TIME ZONE 'UTC')::date`,
      [tenantId, now],
    );
    const days = await client.query<{ day: string; type: string; created: number }>(
      `SELECT to_char(day, 'YYYY-MM-DD') AS day, type, created::int AS created FROM token_daily_creations
       WHERE tenant_id = $1 AND day > ($2::timestamptz AT TIME ZONE 'UTC')::date - $3::int`,
      [tenantId, now, dailySeriesDays],
    );
    const metrics: UsageReport['token_report']['metrics_by_type'] = {};
    for (const type of tokenTypes) metrics[type] = { count: 0 };
    for (const row of types.rows) {
      metrics[row.type] = {
        count: row.count,
        ...(row.last_created_at ? { last_created_at: row.last_created_at.toISOString() } : {}),
      };
    }
    return {
      token_report: {
        metrics_by_type: metrics,
        included_monthly_active_tokens: includedMonthlyActiveTokens,
        monthly_active_tokens: month.rows[0]?.active_tokens ?? 0,
        daily_created_by_type: dailySeries(now, days.rows),
      },
    };
  });
}
