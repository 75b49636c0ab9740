// The permissions an application can be given, as the console offers them (a unit spec checks
// that they are exactly the service's: @tokenvault/contracts is not bundled into the page).
export const consolePermissions = [
  'token:create',
  'token:read',
  'token:update',
  'token:delete',
  'token:use',
  'token:search',
  'application:create',
  'application:read',
  'application:update',
  'application:delete',
  'log:read',
  'tenant:read',
  'tenant:update',
  'tenant:delete',
  'report:read',
  'tenant:member:read',
  'tenant:member:delete',
  'tenant:invitation:create',
  'tenant:invitation:read',
  'tenant:invitation:update',
  'tenant:invitation:delete',
  'reactor:create',
  'reactor:read',
  'reactor:update',
  'reactor:delete',
  'proxy:create',
  'proxy:read',
  'proxy:update',
  'proxy:delete',
  'proxy:invoke',
  'webhook:create',
  'webhook:read',
  'webhook:update',
  'webhook:delete',
  'token-intent:create',
  'token-intent:read',
  'token-intent:delete',
] as const;

export type ConsolePermission = (typeof consolePermissions)[number];

/** The permissions a container rule may hold: the token ones (the service's tokenPermissions). */
export const tokenPermissions = consolePermissions.filter((permission) => permission.startsWith('token:'));

/** What a public application may hold (its key ships in browsers): a unit spec checks it is the service's rule. */
export const publicApplicationPermissions: readonly ConsolePermission[] = [
  'token:create',
  'token-intent:create',
];

/** The permissions in the groups the console shows them in, by what they act on. */
export const permissionGroups: { title: string; permissions: ConsolePermission[] }[] = [
  { title: 'Tokens', permissions: tokenPermissions },
  { title: 'Applications', permissions: consolePermissions.filter((p) => p.startsWith('application:')) },
  {
    title: 'Tenant, logs and reports',
    permissions: ['tenant:read', 'tenant:update', 'tenant:delete', 'log:read', 'report:read'],
  },
  {
    title: 'Members and invitations',
    permissions: consolePermissions.filter(
      (p) => p.startsWith('tenant:member:') || p.startsWith('tenant:invitation:'),
    ),
  },
  { title: 'Reactors', permissions: consolePermissions.filter((p) => p.startsWith('reactor:')) },
  { title: 'Proxies', permissions: consolePermissions.filter((p) => p.startsWith('proxy:')) },
  { title: 'Webhooks', permissions: consolePermissions.filter((p) => p.startsWith('webhook:')) },
  { title: 'Token intents', permissions: consolePermissions.filter((p) => p.startsWith('token-intent:')) },
];

/** The presets a new application starts from; the boxes stay editable after one is chosen. */
export const permissionPresets: { title: string; permissions: readonly ConsolePermission[] }[] = [
  {
    title: 'Read-only',
    permissions: consolePermissions.filter((p) => p.endsWith(':read') || p === 'token:search'),
  },
  { title: 'Tokenize only', permissions: ['token:create'] },
  { title: 'Admin', permissions: consolePermissions },
  { title: 'None', permissions: [] },
];
