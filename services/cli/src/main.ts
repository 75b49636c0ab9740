// npm run --silent tv -- <resource> <command> [options]: the API from a terminal, for operators and
// scripts, on the generated SDK (packages/sdk). Answers are JSON on stdout; a refusal is one line
// on stderr (the problem's status, title, detail and field errors) and exit code 1; a usage
// mistake exit code 2. Where the service is and the key: --base and --key, or TV_BASE_URL and
// TV_API_KEY.
import { parseArgs } from 'node:util';
import {
  createTokenvaultApi,
  type operations,
  type Problem,
  type RequestOf,
  type TokenvaultApi,
} from '@tokenvault/sdk';

class UsageError extends Error {}

interface Command {
  usage: string;
  summary: string;
  options?: Record<string, { type: 'string' | 'boolean'; multiple?: boolean }>;
  positionals: string[];
  run(api: TokenvaultApi, args: Args): Promise<{ data?: unknown; error?: unknown; response: Response }>;
}

interface Args {
  values: Record<string, string | boolean | string[] | undefined>;
  positionals: string[];
}

const json = (option: string, text: string | undefined): unknown => {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw new UsageError(`--${option} must be JSON (e.g. --${option} '{"number":"4242424242424242"}')`);
  }
};

const list = (text: string | undefined) => (text === undefined ? undefined : text.split(',').filter(Boolean));

const string = (values: Args['values'], name: string) => {
  const value = values[name];
  if (typeof value === 'boolean') return undefined;
  return Array.isArray(value) ? value[0] : value;
};

const defined = <T extends object>(object: T): T =>
  Object.fromEntries(Object.entries(object).filter(([, value]) => value !== undefined)) as T;

const resources: Record<string, Record<string, Command>> = {
  tokens: {
    create: {
      usage:
        'tokens create --data JSON [--type card] [--metadata JSON] [--containers /a/,/b/] [--id ID] [--expires-at ISO]',
      summary: 'store a value; prints the token (never its data)',
      options: {
        data: { type: 'string' },
        type: { type: 'string' },
        metadata: { type: 'string' },
        containers: { type: 'string' },
        id: { type: 'string' },
        'expires-at': { type: 'string' },
      },
      positionals: [],
      run: (api, { values }) => {
        const data = json('data', string(values, 'data'));
        if (data === undefined)
          throw new UsageError('tokens create needs --data (the value to store, as JSON)');
        const body = defined({
          data,
          type: string(values, 'type'),
          metadata: json('metadata', string(values, 'metadata')),
          containers: list(string(values, 'containers')),
          id: string(values, 'id'),
          expires_at: string(values, 'expires-at'),
        }) as RequestOf<'createToken'>;
        return api.POST('/tokens', { body });
      },
    },
    get: {
      usage: 'tokens get <id>',
      summary: 'a token with its data',
      positionals: ['id'],
      run: (api, { positionals: [id] }) => api.GET('/tokens/{id}', { params: { path: { id: id! } } }),
    },
    list: {
      usage:
        'tokens list [--type card] [--container /pci/] [--metadata key=value]... [--size N] [--start CURSOR] [--with-data]',
      summary: 'tokens newest first, without their data unless --with-data',
      options: {
        type: { type: 'string', multiple: true },
        container: { type: 'string', multiple: true },
        metadata: { type: 'string', multiple: true },
        size: { type: 'string' },
        start: { type: 'string' },
        'with-data': { type: 'boolean' },
      },
      positionals: [],
      run: (api, { values }) => {
        const metadata: Record<string, string> = {};
        for (const entry of (values.metadata as string[] | undefined) ?? []) {
          const at = entry.indexOf('=');
          if (at < 1) throw new UsageError(`--metadata takes key=value, not "${entry}"`);
          metadata[`metadata.${entry.slice(0, at)}`] = entry.slice(at + 1);
        }
        const size = string(values, 'size');
        const query = defined({
          type: values.type,
          container: values.container,
          size: size === undefined ? undefined : Number(size),
          start: string(values, 'start'),
          include_data: values['with-data'] === true ? 'true' : 'false',
          ...metadata,
          // `metadata.<key>` filters are free-form names the document cannot list.
        }) as operations['listTokens']['parameters']['query'];
        return api.GET('/tokens', { params: { query } });
      },
    },
    delete: {
      usage: 'tokens delete <id>',
      summary: "delete a token (its key is destroyed: its data can't be read again)",
      positionals: ['id'],
      run: (api, { positionals: [id] }) => api.DELETE('/tokens/{id}', { params: { path: { id: id! } } }),
    },
  },
  applications: {
    create: {
      usage:
        'applications create --name NAME --type private|public|management [--permissions a,b] [--rules JSON] [--rate-limit N]',
      summary: 'an application and its first key (printed once: keep it)',
      options: {
        name: { type: 'string' },
        type: { type: 'string' },
        permissions: { type: 'string' },
        rules: { type: 'string' },
        'rate-limit': { type: 'string' },
      },
      positionals: [],
      run: (api, { values }) => {
        const rateLimit = string(values, 'rate-limit');
        const body = defined({
          name: string(values, 'name'),
          type: string(values, 'type'),
          permissions: list(string(values, 'permissions')),
          rules: json('rules', string(values, 'rules')),
          rate_limit: rateLimit === undefined ? undefined : { requests_per_minute: Number(rateLimit) },
        }) as RequestOf<'createApplication'>;
        return api.POST('/applications', { body });
      },
    },
    list: {
      usage: 'applications list [--page N] [--size N]',
      summary: "the tenant's applications",
      options: { page: { type: 'string' }, size: { type: 'string' } },
      positionals: [],
      run: (api, { values }) => {
        const page = string(values, 'page');
        const size = string(values, 'size');
        const query = defined({
          page: page === undefined ? undefined : Number(page),
          size: size === undefined ? undefined : Number(size),
        });
        return api.GET('/applications', { params: { query } });
      },
    },
    get: {
      usage: 'applications get <id>',
      summary: 'one application',
      positionals: ['id'],
      run: (api, { positionals: [id] }) => api.GET('/applications/{id}', { params: { path: { id: id! } } }),
    },
  },
  keys: {
    create: {
      usage: 'keys create <application_id> [--expires-at ISO]',
      summary: 'another key of an application (printed once: keep it)',
      options: { 'expires-at': { type: 'string' } },
      positionals: ['application_id'],
      run: (api, { values, positionals: [id] }) => {
        const expiresAt = string(values, 'expires-at');
        return api.POST('/applications/{id}/keys', {
          params: { path: { id: id! } },
          ...(expiresAt === undefined ? {} : { body: { expires_at: expiresAt } }),
        });
      },
    },
    list: {
      usage: 'keys list <application_id>',
      summary: "an application's keys (ids and expiries, never the keys)",
      positionals: ['application_id'],
      run: (api, { positionals: [id] }) =>
        api.GET('/applications/{id}/keys', { params: { path: { id: id! } } }),
    },
    delete: {
      usage: 'keys delete <application_id> <key_id>',
      summary: 'delete a key: refused (401) from the answer on',
      positionals: ['application_id', 'key_id'],
      run: (api, { positionals: [id, keyId] }) =>
        api.DELETE('/applications/{id}/keys/{key_id}', { params: { path: { id: id!, key_id: keyId! } } }),
    },
  },
};

const connection =
  'Where and as whom: --base URL --key KEY, or TV_BASE_URL and TV_API_KEY (the key: npm run bootstrap prints one).';

function helpOf(resource?: string): string {
  if (resource === undefined) {
    return [
      'usage: npm run --silent tv -- <resource> <command> [options]',
      '',
      ...Object.entries(resources).map(
        ([name, commands]) => `  ${name.padEnd(13)}${Object.keys(commands).join(' | ')}`,
      ),
      '',
      'npm run --silent tv -- <resource> --help lists its commands and their options.',
      connection,
    ].join('\n');
  }
  return [
    ...Object.values(resources[resource]!).map((command) => `  ${command.usage}\n      ${command.summary}`),
    '',
    connection,
  ].join('\n');
}

/** One line: what the API refused and why, field by field. */
function problemLine(status: number, problem: Partial<Problem> | undefined): string {
  const fields = Object.entries(problem?.errors ?? {})
    .map(([field, messages]) => `${field}: ${([] as string[]).concat(messages).join(', ')}`)
    .join('; ');
  return [
    `error: ${status} ${problem?.title ?? 'no problem details'}`,
    problem?.detail ? `: ${problem.detail}` : '',
    fields ? ` (${fields})` : '',
  ].join('');
}

async function main(argv: string[]): Promise<number> {
  const [resourceName, commandName, ...rest] = argv;
  if (resourceName === undefined || resourceName === '--help' || resourceName === '-h') {
    console.log(helpOf());
    return resourceName === undefined ? 2 : 0;
  }
  const commands = resources[resourceName];
  if (!commands)
    throw new UsageError(`unknown resource "${resourceName}": one of ${Object.keys(resources).join(', ')}`);
  if (commandName === undefined || commandName === '--help' || commandName === '-h') {
    console.log(helpOf(resourceName));
    return commandName === undefined ? 2 : 0;
  }
  const command = commands[commandName];
  if (!command) {
    throw new UsageError(
      `unknown command "${resourceName} ${commandName}": one of ${Object.keys(commands).join(', ')}`,
    );
  }
  if (rest.includes('--help') || rest.includes('-h')) {
    console.log(`usage: npm run --silent tv -- ${command.usage}\n  ${command.summary}\n\n${connection}`);
    return 0;
  }
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({
      args: rest,
      allowPositionals: true,
      options: { ...command.options, base: { type: 'string' }, key: { type: 'string' } },
    });
  } catch (error) {
    throw new UsageError(`${(error as Error).message} (usage: ${command.usage})`);
  }
  const values = parsed.values as Args['values'];
  if (parsed.positionals.length !== command.positionals.length) {
    throw new UsageError(
      `${resourceName} ${commandName} takes ${command.positionals.map((name) => `<${name}>`).join(' ') || 'no arguments'} (usage: ${command.usage})`,
    );
  }
  const baseUrl = string(values, 'base') ?? process.env.TV_BASE_URL;
  const apiKey = string(values, 'key') ?? process.env.TV_API_KEY;
  if (!baseUrl)
    throw new UsageError(`no service to call: set TV_BASE_URL or --base (e.g. http://localhost:8080)`);
  if (!apiKey) throw new UsageError(`no API key: set TV_API_KEY or --key`);
  const api = createTokenvaultApi({ baseUrl, apiKey });
  let answer: Awaited<ReturnType<Command['run']>>;
  try {
    answer = await command.run(api, { values, positionals: parsed.positionals });
  } catch (error) {
    if (error instanceof UsageError) throw error;
    console.error(`error: could not reach ${baseUrl} (TV_BASE_URL or --base): ${(error as Error).message}`);
    return 1;
  }
  if (!answer.response.ok) {
    console.error(problemLine(answer.response.status, answer.error as Partial<Problem> | undefined));
    return 1;
  }
  if (answer.data !== undefined) console.log(JSON.stringify(answer.data, null, 2));
  return 0;
}

try {
  process.exitCode = await main(process.argv.slice(2));
} catch (error) {
  if (!(error instanceof UsageError)) throw error;
  console.error(`error: ${error.message}`);
  process.exitCode = 2;
}
