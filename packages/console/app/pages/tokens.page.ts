import { api, type Page } from '../kit/api-client.ts';
import { h } from '../kit/dom.ts';
import { page } from '../kit/layout.ts';
import { attempt, pager, table } from '../kit/widgets.ts';

interface Token {
  id: string;
  type: string;
  containers?: string[];
  metadata?: Record<string, string>;
  fingerprint?: string;
  created_at: string;
  expires_at?: string;
  data?: unknown;
}

/** The tenant's tokens without their data, a page of 20 at a time; Reveal reads one token's data. */
export async function tokensPage(): Promise<void> {
  const results = h('div', {});
  const cursors: (string | undefined)[] = [undefined];
  const load = async (index: number) => {
    // Without data: the list is no read of any token; only Reveal reads one (GET /tokens/{id}).
    const query = new URLSearchParams({ size: '20', include_data: 'false' });
    const cursor = cursors[index];
    if (cursor) query.set('start', cursor);
    const tokens = await api<Page<Token>>('GET', `/tokens?${query.toString()}`);
    cursors.length = index + 1;
    if (tokens.pagination.next) cursors.push(tokens.pagination.next);
    results.replaceChildren(
      table(
        ['Id', 'Type', 'Containers', 'Metadata', 'Fingerprint', 'Created', 'Expires', 'Data'],
        tokens.data.map((token) => {
          const cell = h('div', {}, h('span', { 'aria-label': 'hidden data' }, '••••••••'));
          const reveal = h(
            'button',
            {
              type: 'button',
              class: 'secondary',
              'aria-label': `Reveal the data of ${token.id}`,
              onclick: () =>
                void attempt(cell, async () => {
                  // A read of the token: the service logs it.
                  const read = await api<Token>('GET', `/tokens/${token.id}`);
                  cell.replaceChildren(h('pre', {}, JSON.stringify(read.data, null, 2)));
                }),
            },
            'Reveal',
          );
          cell.append(' ', reveal);
          return [
            h('code', {}, token.id),
            token.type,
            (token.containers ?? []).join(', '),
            Object.keys(token.metadata ?? {}).length ? h('code', {}, JSON.stringify(token.metadata)) : '',
            token.fingerprint ? h('code', {}, token.fingerprint) : '',
            new Date(token.created_at).toLocaleString(),
            token.expires_at ? new Date(token.expires_at).toLocaleString() : '',
            cell,
          ];
        }),
      ),
      pager(index, !!tokens.pagination.next, results, load),
    );
  };
  page(
    'Tokens',
    h('p', {}, 'Data stays hidden until you reveal it; each reveal is a read in the log.'),
    results,
  );
  await load(0);
}
