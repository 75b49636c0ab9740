import { actorNames } from '../kit/actor-names.ts';
import { api, type Page } from '../kit/api-client.ts';
import { h } from '../kit/dom.ts';
import { page } from '../kit/layout.ts';
import { attempt, field, notice, pager, table } from '../kit/widgets.ts';

interface Log {
  created_at: string;
  entity_type: string;
  entity_id: string;
  operation: string;
  actor_type?: string;
  actor_id?: string;
  message: string;
}

/** The audit log, filtered by entity and dates, a page of 20 at a time. */
export async function logsPage(): Promise<void> {
  const types = await api<{ display_name: string; value: string }[]>('GET', '/logs/entity-types');
  const entityType = h(
    'select',
    { name: 'entity_type' },
    h('option', { value: '' }, 'Any'),
    ...types.map((type) => h('option', { value: type.value }, type.display_name)),
  );
  const entityId = h('input', { name: 'entity_id' });
  const from = h('input', { type: 'date', name: 'start_date' });
  const to = h('input', { type: 'date', name: 'end_date' });
  const results = h('div', { 'aria-live': 'polite' });
  const cursors: (string | undefined)[] = [undefined];
  // Only the newest load draws: an older answer arriving late never replaces a filtered page.
  let newestLoad = 0;
  const load = async (index: number) => {
    const thisLoad = ++newestLoad;
    const query = new URLSearchParams({ size: '20' });
    if (entityType.value) query.set('entity_type', entityType.value);
    if (entityId.value.trim()) query.set('entity_id', entityId.value.trim());
    if (from.value) query.set('start_date', from.value);
    if (to.value) query.set('end_date', to.value);
    const cursor = cursors[index];
    if (cursor) query.set('start', cursor);
    const logs = await api<Page<Log>>('GET', `/logs?${query.toString()}`);
    const actors = await actorNames(logs.data.map((log) => log.actor_id));
    if (thisLoad !== newestLoad) return;
    cursors.length = index + 1;
    if (logs.pagination.next) cursors.push(logs.pagination.next);
    results.replaceChildren(
      table(
        ['When', 'Entity', 'Id', 'Operation', 'Actor', 'Message'],
        logs.data.map((log) => [
          new Date(log.created_at).toLocaleString(),
          log.entity_type,
          h('code', {}, log.entity_id),
          log.operation,
          actors.link(log.actor_id, log.actor_type),
          log.message,
        ]),
      ),
      pager(index, !!logs.pagination.next, results, load),
    );
  };
  const form = h(
    'form',
    {
      onsubmit: (event: Event) => {
        event.preventDefault();
        cursors.length = 1;
        results.replaceChildren(notice('Loading…'));
        void attempt(results, () => load(0));
      },
    },
    field('Entity type', entityType),
    field('Entity id', entityId),
    field('From', from),
    field('To', to),
    h('button', { type: 'submit' }, 'Filter'),
  );
  page('Logs', form, results);
  await load(0);
}
