import {
  consolePermissions,
  permissionGroups,
  permissionPresets,
  publicApplicationPermissions,
  tokenPermissions,
} from '../console-permissions.ts';
import { actorNames } from '../kit/actor-names.ts';
import { api, type Page } from '../kit/api-client.ts';
import { h } from '../kit/dom.ts';
import { page } from '../kit/layout.ts';
import { attempt, field, notice, shownOnce, table } from '../kit/widgets.ts';

interface Rule {
  description?: string;
  priority?: number;
  container: string;
  transform: string;
  permissions: string[];
}
interface Application {
  id: string;
  name: string;
  type: string;
  permissions: string[];
  rules?: Rule[];
  rate_limit?: { requests_per_minute?: number };
  created_by?: string;
  key?: string;
}
interface ApplicationKey {
  id: string;
  expires_at?: string;
  created_by?: string;
  created_at?: string;
  key?: string;
}

const transforms = ['reveal', 'mask', 'redact'] as const;

/** `#/applications` lists them; `#/applications/<id>` edits one and manages its keys. */
export async function applicationsRoute(id?: string): Promise<void> {
  if (id) await applicationPage(id);
  else await applicationsPage();
}

/**
 * What an application may do, in a line: its tenant-wide permissions and its rules, each
 * permission as code (a name such as token-intent:create would otherwise break at its hyphen).
 */
function accessSummary(application: Application): HTMLElement {
  const names = (permissions: readonly string[]) =>
    permissions.flatMap((permission, index) => [index > 0 ? ', ' : '', h('code', {}, permission)]);
  const parts: (string | HTMLElement)[][] = [];
  if (application.permissions.length > 0) parts.push(names(application.permissions));
  for (const rule of application.rules ?? []) {
    parts.push([...names(rule.permissions), ` in ${rule.container} (${rule.transform})`]);
  }
  if (parts.length === 0) return h('span', {}, 'Nothing');
  return h('span', {}, ...parts.flatMap((part, index) => [index > 0 ? '; ' : '', ...part]));
}

/** The permission boxes, in groups, with the presets that tick them; public types hold only what they may. */
function permissionsEditor(chosen: readonly string[], type: () => string) {
  const boxes = consolePermissions.map((permission) =>
    h('input', {
      type: 'checkbox',
      name: 'permission',
      value: permission,
      checked: chosen.includes(permission),
    }),
  );
  const boxOf = (permission: string) => boxes.find((box) => box.value === permission)!;
  const applyType = () => {
    for (const box of boxes) {
      box.disabled =
        type() === 'public' && !(publicApplicationPermissions as readonly string[]).includes(box.value);
      if (box.disabled) box.checked = false;
    }
  };
  const presets = h(
    'div',
    { class: 'actions', role: 'group', 'aria-label': 'Presets' },
    ...permissionPresets.map((preset) =>
      h(
        'button',
        {
          type: 'button',
          class: 'secondary',
          onclick: () => {
            for (const box of boxes) box.checked = preset.permissions.includes(box.value as never);
            applyType();
          },
        },
        preset.title,
      ),
    ),
  );
  const element = h(
    'fieldset',
    { class: 'permissions' },
    h('legend', {}, 'Permissions (tenant-wide)'),
    presets,
    ...permissionGroups.map((group) =>
      h(
        'fieldset',
        {},
        h('legend', {}, group.title),
        ...group.permissions.map((permission) => h('label', {}, boxOf(permission), permission)),
      ),
    ),
  );
  applyType();
  return {
    element,
    applyType,
    value: () => boxes.filter((box) => box.checked).map((box) => box.value),
  };
}

/** One container rule's fields; `number` names them for screen readers (Rule 2: container). */
function ruleEditor(rule: Partial<Rule>, number: number, remove: () => void) {
  const named = (label: string) => `Rule ${number}: ${label}`;
  const description = h('input', {
    name: 'rule_description',
    maxlength: '500',
    value: rule.description ?? '',
    'aria-label': named('description'),
  });
  const priority = h('input', {
    type: 'number',
    name: 'rule_priority',
    min: '1',
    max: '1000000',
    value: rule.priority === undefined ? '' : String(rule.priority),
    'aria-label': named('priority'),
  });
  const container = h('input', {
    name: 'rule_container',
    required: true,
    maxlength: '200',
    placeholder: '/pci/',
    value: rule.container ?? '/',
    'aria-label': named('container'),
  });
  const transform = h(
    'select',
    { name: 'rule_transform', 'aria-label': named('transform') },
    ...transforms.map((value) =>
      h('option', { value, selected: value === (rule.transform ?? 'reveal') }, value),
    ),
  );
  const boxes = tokenPermissions.map((permission) =>
    h('input', {
      type: 'checkbox',
      value: permission,
      checked: (rule.permissions ?? []).includes(permission),
      'aria-label': named(permission),
    }),
  );
  const element = h(
    'fieldset',
    { class: 'rule' },
    h('legend', {}, `Rule ${number}`),
    h('label', {}, 'Description', description),
    h('label', {}, 'Priority (1 first)', priority),
    h('label', {}, 'Container', container),
    h('label', {}, 'Transform', transform),
    h(
      'div',
      { class: 'actions', role: 'group', 'aria-label': named('permissions') },
      ...boxes.map((box) => h('label', { class: 'check' }, box, box.value)),
    ),
    h('button', { type: 'button', class: 'danger', onclick: remove }, `Remove rule ${number}`),
  );
  return {
    element,
    value: (): Rule => ({
      ...(description.value.trim() ? { description: description.value.trim() } : {}),
      ...(priority.value ? { priority: Number(priority.value) } : {}),
      container: container.value.trim(),
      transform: transform.value,
      permissions: boxes.filter((box) => box.checked).map((box) => box.value),
    }),
  };
}

/** The container rules, each with its fields, and a button that adds one. */
function rulesEditor(initial: Rule[]) {
  const rules: Partial<Rule>[] = [...initial];
  let editors: ReturnType<typeof ruleEditor>[] = [];
  const list = h('div', {});
  const draw = () => {
    // Keep what was typed when a rule is added or removed.
    const typed = editors.map((editor) => editor.value());
    if (typed.length === rules.length) rules.splice(0, rules.length, ...typed);
    editors = rules.map((rule, index) =>
      ruleEditor(rule, index + 1, () => {
        rules.splice(0, rules.length, ...editors.map((editor) => editor.value()));
        rules.splice(index, 1);
        editors = [];
        draw();
      }),
    );
    list.replaceChildren(...editors.map((editor) => editor.element));
  };
  draw();
  const element = h(
    'fieldset',
    { class: 'rules' },
    h('legend', {}, 'Container rules'),
    h(
      'p',
      { class: 'hint' },
      'A rule grants token permissions in one container (/ is every container); the first rule by priority that covers a token decides, and its transform says what a read shows: the data (reveal), its mask (mask) or nothing (redact).',
    ),
    list,
    h(
      'button',
      {
        type: 'button',
        class: 'secondary',
        onclick: () => {
          rules.splice(0, rules.length, ...editors.map((editor) => editor.value()));
          rules.push({ container: '/', transform: 'reveal', permissions: ['token:read'] });
          editors = [];
          draw();
        },
      },
      'Add a container rule',
    ),
  );
  return { element, value: () => editors.map((editor) => editor.value()) };
}

/** The form that creates an application (no `existing`) or replaces one's name and grants. */
function applicationForm(status: HTMLElement, existing?: Application): HTMLElement {
  const name = h('input', { name: 'name', required: true, maxlength: '200', value: existing?.name ?? '' });
  const type = h(
    'select',
    { name: 'type', disabled: !!existing },
    ...['private', 'public', 'management'].map((value) =>
      h('option', { value, selected: value === existing?.type }, value),
    ),
  );
  const permissions = permissionsEditor(existing?.permissions ?? [], () => type.value);
  type.addEventListener('change', permissions.applyType);
  const rules = rulesEditor(existing?.rules ?? []);
  const rate = h('input', {
    type: 'number',
    name: 'requests_per_minute',
    min: '1',
    value: existing?.rate_limit?.requests_per_minute ? String(existing.rate_limit.requests_per_minute) : '',
  });
  return h(
    'form',
    {
      class: 'stacked',
      onsubmit: (event: Event) => {
        event.preventDefault();
        void attempt(status, async () => {
          const grants = {
            name: name.value.trim(),
            permissions: permissions.value(),
            rules: rules.value(),
            ...(rate.value ? { rate_limit: { requests_per_minute: Number(rate.value) } } : {}),
          };
          if (existing) {
            await api('PUT', `/applications/${existing.id}`, grants);
            await applicationPage(existing.id, notice(`Saved “${grants.name}”.`));
            return;
          }
          const created = await api<Application>('POST', '/applications', { ...grants, type: type.value });
          await applicationsPage(shownOnce(`The key of “${created.name}”.`, created.key ?? '', 'new-key'));
        });
      },
    },
    field('Name', name),
    field('Type', type),
    permissions.element,
    rules.element,
    field('Requests per minute (empty: the service’s default)', rate),
    h('button', { type: 'submit' }, existing ? 'Save changes' : 'Create application'),
  );
}

/**
 * The tenant's applications, with their creators, and the form that creates one; a new key is
 * passed in as `shownKey` to be shown once, above.
 */
export async function applicationsPage(shownKey?: HTMLElement): Promise<void> {
  const list = await api<Page<Application>>('GET', '/applications?size=100');
  const creators = await actorNames(list.data.map((application) => application.created_by));
  const status = h('div', {});
  if (shownKey) status.append(shownKey);
  const rows = list.data.map((application) => [
    h('a', { href: `#/applications/${application.id}` }, application.name),
    application.type,
    accessSummary(application),
    application.created_by ? creators.link(application.created_by) : '',
    h('code', {}, application.id),
    h(
      'button',
      {
        type: 'button',
        class: 'danger',
        'aria-label': `Delete ${application.name}`,
        onclick: () => {
          if (!confirm(`Delete the application “${application.name}” and its keys?`)) return;
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
    h('h2', {}, 'Applications'),
    table(['Name', 'Type', 'Access', 'Created by', 'Id', ''], rows),
    h('h2', {}, 'New application'),
    applicationForm(status),
  );
}

/** One application: its form, and its keys (create one, shown once; delete one: a rotation). */
async function applicationPage(id: string, message?: HTMLElement): Promise<void> {
  const [application, keys] = await Promise.all([
    api<Application>('GET', `/applications/${encodeURIComponent(id)}`),
    api<ApplicationKey[]>('GET', `/applications/${encodeURIComponent(id)}/keys`),
  ]);
  const creators = await actorNames(keys.map((key) => key.created_by));
  const status = h('div', {});
  if (message) status.append(message);
  const expires = h('input', { type: 'datetime-local', name: 'expires_at' });
  const keyForm = h(
    'form',
    {
      onsubmit: (event: Event) => {
        event.preventDefault();
        void attempt(status, async () => {
          const body = expires.value ? { expires_at: new Date(expires.value).toISOString() } : undefined;
          const created = await api<ApplicationKey>('POST', `/applications/${application.id}/keys`, body);
          await applicationPage(
            application.id,
            shownOnce(`The new key of “${application.name}”.`, created.key ?? '', 'new-key'),
          );
        });
      },
    },
    field('Expires (optional)', expires),
    h('button', { type: 'submit' }, 'Create a key'),
  );
  page(
    application.name,
    h('p', {}, h('a', { href: '#/applications' }, 'All applications')),
    status,
    h('h2', {}, 'Keys'),
    h(
      'p',
      { class: 'hint' },
      'To rotate a key: create a new one, put it where the old one is used, then delete the old one (it stops working at once).',
    ),
    table(
      ['Key id', 'Created', 'Created by', 'Expires', ''],
      keys.map((key) => [
        h('code', {}, key.id),
        key.created_at ? new Date(key.created_at).toLocaleString() : '',
        key.created_by ? creators.link(key.created_by) : '',
        key.expires_at ? new Date(key.expires_at).toLocaleString() : 'Never',
        h(
          'button',
          {
            type: 'button',
            class: 'danger',
            'aria-label': `Delete key ${key.id}`,
            onclick: () => {
              if (!confirm(`Delete the key ${key.id}? It stops working at once.`)) return;
              void attempt(status, async () => {
                await api('DELETE', `/applications/${application.id}/keys/${key.id}`);
                await applicationPage(application.id, notice('Key deleted.'));
              });
            },
          },
          'Delete',
        ),
      ]),
    ),
    keyForm,
    h('h2', {}, 'Access'),
    applicationForm(status, application),
  );
}
