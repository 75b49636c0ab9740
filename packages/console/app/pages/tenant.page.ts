import { BarController, BarElement, CategoryScale, Chart, Legend, LinearScale, Tooltip } from 'chart.js';
import { actorNames } from '../kit/actor-names.ts';
import { api } from '../kit/api-client.ts';
import { h } from '../kit/dom.ts';
import { page } from '../kit/layout.ts';
import { attempt, field, notice, table } from '../kit/widgets.ts';

// Chart.js (an npm dependency, bundled into console.js by esbuild: no CDN) draws on a canvas and
// sets sizes through the CSSOM, which the console's CSP (no inline style) allows.
Chart.register(BarController, BarElement, CategoryScale, LinearScale, Legend, Tooltip);

interface Tenant {
  id: string;
  name: string;
  owner_id: string;
  settings: { deduplicate_tokens: 'true' | 'false' };
  created_at?: string;
}
interface UsageReport {
  token_report: {
    metrics_by_type: Record<string, { count: number; last_created_at?: string }>;
    included_monthly_active_tokens: number;
    monthly_active_tokens: number;
    daily_created_by_type: { date: string; counts: Record<string, number> }[];
  };
}

/** A bar chart on a canvas, described for screen readers by `label` (the table beside it has the figures). */
function barChart(
  label: string,
  labels: string[],
  datasets: { label: string; data: number[]; backgroundColor: string }[],
  { horizontal = false, stacked = false }: { horizontal?: boolean; stacked?: boolean } = {},
): HTMLElement {
  const canvas = h('canvas', { role: 'img', 'aria-label': label });
  const box = h('div', { class: 'chart' }, canvas);
  // Drawn once the canvas is in the page (Chart.js measures its box).
  queueMicrotask(() => {
    new Chart(canvas, {
      type: 'bar',
      data: { labels, datasets },
      options: {
        animation: false,
        aspectRatio: horizontal ? 5 : 2,
        indexAxis: horizontal ? 'y' : 'x',
        scales: {
          [horizontal ? 'x' : 'y']: { beginAtZero: true, stacked, ticks: { precision: 0 } },
          [horizontal ? 'y' : 'x']: { stacked },
        },
        plugins: { legend: { display: datasets.length > 1 } },
      },
    });
  });
  return box;
}

/** The tenant: its settings (editable) and its usage, charted against the plan. */
export async function tenantPage(message?: HTMLElement): Promise<void> {
  const [tenant, usage] = await Promise.all([
    api<Tenant>('GET', '/tenants/self'),
    api<UsageReport>('GET', '/tenants/self/reports/usage'),
  ]);
  const names = await actorNames([tenant.owner_id]);
  const status = h('div', {});
  if (message) status.append(message);
  const name = h('input', { name: 'name', required: true, maxlength: '200', value: tenant.name });
  const deduplicate = h('input', {
    type: 'checkbox',
    name: 'deduplicate_tokens',
    checked: tenant.settings.deduplicate_tokens === 'true',
  });
  const settings = h(
    'form',
    {
      onsubmit: (event: Event) => {
        event.preventDefault();
        void attempt(status, async () => {
          await api('PUT', '/tenants/self', {
            name: name.value.trim(),
            settings: { deduplicate_tokens: deduplicate.checked ? 'true' : 'false' },
          });
          await tenantPage(notice('Settings saved.'));
        });
      },
    },
    field('Name', name),
    h(
      'label',
      { class: 'check' },
      deduplicate,
      'Deduplicate tokens (a token created again with the same data and fingerprint returns the existing one)',
    ),
    h('button', { type: 'submit' }, 'Save settings'),
  );

  const report = usage.token_report;
  const types = Object.entries(report.metrics_by_type);
  const used = report.monthly_active_tokens;
  const included = report.included_monthly_active_tokens;
  const days = report.daily_created_by_type;
  // Only the types created in the period get a colour in the legend.
  const createdTypes = types
    .map(([type]) => type)
    .filter((type) => days.some((day) => (day.counts[type] ?? 0) > 0));
  const createdInPeriod = days.reduce(
    (sum, day) => sum + Object.values(day.counts).reduce((daySum, count) => daySum + count, 0),
    0,
  );
  const palette = ['#0b5cad', '#2a7d2e', '#a4161a', '#7a4fb5', '#b36b00', '#00838f', '#5d4037', '#455a64'];
  page(
    tenant.name,
    status,
    h('h2', {}, 'Settings'),
    settings,
    table(
      ['Id', 'Owner', 'Created'],
      [
        [
          h('code', {}, tenant.id),
          names.link(tenant.owner_id, 'user'),
          tenant.created_at ? new Date(tenant.created_at).toLocaleString() : '',
        ],
      ],
    ),
    h('h2', {}, 'Usage'),
    h('h3', {}, 'Monthly active tokens'),
    h(
      'p',
      { id: 'monthly-active' },
      `${used} of the ${included} included in the plan this month (${included > 0 ? Math.round((used / included) * 100) : 0}%).`,
    ),
    barChart(
      `Monthly active tokens: ${used} of ${included} included`,
      ['This month'],
      [
        { label: 'Active', data: [used], backgroundColor: used > included ? '#a4161a' : '#0b5cad' },
        { label: 'Included in the plan', data: [included], backgroundColor: '#c9ced6' },
      ],
      { horizontal: true },
    ),
    h('h3', {}, 'Tokens by type'),
    barChart(
      `Tokens by type: ${types.map(([type, metric]) => `${type} ${metric.count}`).join(', ')}`,
      types.map(([type]) => type),
      [{ label: 'Tokens', data: types.map(([, metric]) => metric.count), backgroundColor: '#0b5cad' }],
    ),
    h('h3', {}, 'Tokens created per day (last 30 days, UTC)'),
    barChart(
      `Tokens created per day, last 30 days: ${createdInPeriod} in all${createdTypes
        .map((type) => `, ${type} ${days.reduce((sum, day) => sum + (day.counts[type] ?? 0), 0)}`)
        .join('')}`,
      days.map((day) => day.date.slice(5)),
      createdTypes.map((type, index) => ({
        label: type,
        data: days.map((day) => day.counts[type] ?? 0),
        backgroundColor: palette[index % palette.length] ?? '#0b5cad',
      })),
      { stacked: true },
    ),
    table(
      ['Type', 'Tokens', 'Last created'],
      types.map(([type, metric]) => [
        type,
        String(metric.count),
        metric.last_created_at ? new Date(metric.last_created_at).toLocaleString() : '',
      ]),
    ),
  );
}
