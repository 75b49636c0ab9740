import { consolePermissions } from '../console-permissions.ts';
import { api, type Page } from '../kit/api-client.ts';
import { h } from '../kit/dom.ts';
import { page } from '../kit/layout.ts';
import { attempt, field, table } from '../kit/widgets.ts';
import type { Member } from './members.page.ts';

interface Application {
  id: string;
  name: string;
  type: string;
  permissions: string[];
  created_by?: string;
  key?: string;
}

/**
 * Who created each application, by id: a member by e-mail, an application (a management key) by
 * name. A key belongs to the tenant and outlives its creator's membership, so a creator that is
 * neither any more is shown as removed, for the owner to decide about the key.
 */
async function creatorsOf(applications: Application[]): Promise<Map<string, string>> {
  const names = new Map(
    applications.map((application) => [application.id, `Application ${application.name}`]),
  );
  const users = [...new Set(applications.flatMap((application) => application.created_by ?? []))].filter(
    (id) => !names.has(id),
  );
  const pages = await Promise.all(
    Array.from({ length: Math.ceil(users.length / 50) }, (_, index) => {
      const query = new URLSearchParams({ size: '50' });
      for (const id of users.slice(index * 50, index * 50 + 50)) query.append('user_id', id);
      return api<Page<Member>>('GET', `/tenants/self/members?${query.toString()}`);
    }),
  );
  for (const member of pages.flatMap((members) => members.data)) {
    if (member.user.id && member.user.email) names.set(member.user.id, member.user.email);
  }
  for (const id of users) if (!names.has(id)) names.set(id, `Removed member or application ${id}`);
  return names;
}

/**
 * The tenant's applications, with their creators, and the form that creates one; a new key is
 * passed in as `shownKey` to be shown once, above.
 */
export async function applicationsPage(shownKey?: HTMLElement): Promise<void> {
  const list = await api<Page<Application>>('GET', '/applications?size=100');
  const creators = await creatorsOf(list.data);
  const status = h('div', {});
  if (shownKey) status.append(shownKey);
  const name = h('input', { name: 'name', required: true, maxlength: '200' });
  const type = h(
    'select',
    { name: 'type' },
    ...['private', 'public', 'management'].map((value) => h('option', { value }, value)),
  );
  const boxes = consolePermissions.map((permission) => h('input', { type: 'checkbox', value: permission }));
  const form = h(
    'form',
    {
      onsubmit: (event: Event) => {
        event.preventDefault();
        void attempt(status, async () => {
          const created = await api<Application>('POST', '/applications', {
            name: name.value.trim(),
            type: type.value,
            permissions: boxes.filter((box) => box.checked).map((box) => box.value),
          });
          await applicationsPage(
            h(
              'div',
              { class: 'notice', role: 'status' },
              h('p', {}, `The key of “${created.name}”. Copy it now: it is shown only once.`),
              h('output', { class: 'secret', id: 'new-key' }, created.key ?? ''),
            ),
          );
        });
      },
    },
    field('Name', name),
    field('Type', type),
    h('fieldset', {}, h('legend', {}, 'Permissions'), ...boxes.map((box) => h('label', {}, box, box.value))),
    h('button', { type: 'submit' }, 'Create application'),
  );
  const rows = list.data.map((application) => [
    application.name,
    application.type,
    application.permissions.join(', '),
    application.created_by ? (creators.get(application.created_by) ?? '') : '',
    h('code', {}, application.id),
    h(
      'button',
      {
        type: 'button',
        class: 'danger',
        'aria-label': `Delete ${application.name}`,
        onclick: () => {
          if (!confirm(`Delete the application “${application.name}” and its key?`)) return;
          void attempt(status, async () => {
            await api('DELETE', `/applications/${application.id}`);
            await applicationsPage();
          });
        },
      },
      'Delete',
    ),
  ]);
  page(
    'Applications',
    status,
    h('h2', {}, 'New application'),
    form,
    h('h2', {}, 'Applications'),
    table(['Name', 'Type', 'Permissions', 'Created by', 'Id', ''], rows),
  );
}
