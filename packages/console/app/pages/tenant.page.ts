import { api } from '../kit/api-client.ts';
import { h } from '../kit/dom.ts';
import { page } from '../kit/layout.ts';
import { table } from '../kit/widgets.ts';

/** An object's fields as a two-column table; nested values as JSON. */
function facts(object: Record<string, unknown>): HTMLElement {
  return table(
    ['Field', 'Value'],
    Object.entries(object).map(([name, value]) => [
      name,
      typeof value === 'object' && value !== null ? h('code', {}, JSON.stringify(value)) : String(value),
    ]),
  );
}

/** The tenant and its usage report. */
export async function tenantPage(): Promise<void> {
  const [tenant, usage] = await Promise.all([
    api<Record<string, unknown>>('GET', '/tenants/self'),
    api<Record<string, unknown>>('GET', '/tenants/self/reports/usage'),
  ]);
  page(
    typeof tenant.name === 'string' ? tenant.name : 'Tenant',
    h('h2', {}, 'Tenant'),
    facts(tenant),
    h('h2', {}, 'Usage'),
    facts(usage),
  );
}
