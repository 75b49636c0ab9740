// Every HTTP call of Basis Theory's Node SDK (@basis-theory/node-sdk), read from its compiled
// clients: the list a team moving from Basis Theory checks this service against
// (docs/compatibility.md). Read statically, since calling each method would need a valid
// argument for every one of them.
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, sep } from 'node:path';

export interface SdkCall {
  /** The client as an SDK user reaches it: `tokens`, `tenants.members` (`client.tenants.members`). */
  client: string;
  /** The client's method: `create`, `listV2`. */
  method: string;
  httpMethod: string;
  /** From the API's root, path parameters as `{name}`: `/reactors/{id}/results/{requestId}`. */
  path: string;
}

export interface SdkSurface {
  version: string;
  calls: SdkCall[];
}

const sdkPackage = '@basis-theory/node-sdk';

/** The SDK's version and every call of its clients, ordered by client, then path, then HTTP method. */
export function readSdkSurface(): SdkSurface {
  const manifestPath = createRequire(import.meta.url).resolve(`${sdkPackage}/package.json`);
  const { version } = JSON.parse(readFileSync(manifestPath, 'utf8')) as { version: string };
  const resources = join(dirname(manifestPath), 'dist', 'cjs', 'api', 'resources');
  const calls = clientFiles(resources).flatMap((file) =>
    callsOfClient(clientName(relative(resources, file)), readFileSync(file, 'utf8'), file),
  );
  return { version, calls: calls.sort(compareCalls) };
}

function clientFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return clientFiles(path);
    return entry.name === 'Client.js' ? [path] : [];
  });
}

/** `tenants/resources/members/client/Client.js` → `tenants.members`. */
function clientName(pathFromResources: string): string {
  return pathFromResources
    .split(sep)
    .slice(0, -2)
    .filter((segment) => segment !== 'resources')
    .join('.');
}

// A class member of the compiled client, four spaces in: `    create(request, requestOptions) {`.
// Each public method `x` delegates to `__x`, which builds the request; a paged `list` builds it
// in its own body.
const memberPattern = /^ {4}([A-Za-z_$][\w$]*)\(.*\) \{$/;
// The request's URL: `core.url.join(<base URL>, "tokens")` or `` `tokens/${core.url.encodePathParam(id)}` ``.
const urlPattern = /^\s*url: core\.url\.join\(.*, ("[^"]*"|`[^`]*`)\),$/;
const httpMethodPattern = /^\s*method: "([A-Z]+)",$/;
// The SDK names each call in its timeout error: a check that the URL and method read belong together.
const timeoutPattern = /Timeout exceeded when calling ([A-Z]+) (\S+)\."/;

function callsOfClient(client: string, source: string, file: string): SdkCall[] {
  const lines = source.split('\n');
  const calls: SdkCall[] = [];
  let member: string | undefined;
  lines.forEach((line, index) => {
    const memberMatch = memberPattern.exec(line);
    if (memberMatch) member = memberMatch[1];
    const urlMatch = urlPattern.exec(line);
    if (!urlMatch) {
      if (line.includes('core.url.join(')) throw unreadable(file, index, 'a URL the extractor cannot read');
      return;
    }
    if (member === undefined || member === 'constructor')
      throw unreadable(file, index, 'a URL outside any method');
    const path = `/${pathOf(urlMatch[1]!, file, index)}`;
    const httpMethod = firstMatchAfter(lines, index, httpMethodPattern, file)[1]!;
    const [, namedMethod, namedPath] = firstMatchAfter(lines, index, timeoutPattern, file);
    if (namedMethod !== httpMethod || shape(namedPath!) !== shape(path))
      throw unreadable(file, index, `${httpMethod} ${path} where the SDK names ${namedMethod} ${namedPath}`);
    calls.push({ client, method: member.replace(/^__/, ''), httpMethod, path });
  });
  return calls;
}

/** The path of a string or template literal, each `${f(name)}` or `${name}` as `{name}`. */
function pathOf(literal: string, file: string, index: number): string {
  const path = literal
    .slice(1, -1)
    .replace(/\$\{(?:[\w$.]+\()?([A-Za-z_$][\w$]*)\)?\}/g, (_, name: string) => `{${name}}`);
  if (path.includes('${')) throw unreadable(file, index, `a path parameter it cannot name in ${literal}`);
  return path;
}

function firstMatchAfter(lines: string[], index: number, pattern: RegExp, file: string): RegExpExecArray {
  for (const line of lines.slice(index + 1)) {
    if (urlPattern.test(line)) break;
    const match = pattern.exec(line);
    if (match) return match;
  }
  throw unreadable(file, index, `no ${String(pattern)} after the URL`);
}

/** A path with its parameters unnamed: `/tokens/{}`. Parameter names differ between documents. */
export function shape(path: string): string {
  return path.replace(/\{[^}]*\}/g, '{}');
}

function unreadable(file: string, index: number, what: string): Error {
  return new Error(
    `${sdkPackage}: ${file}:${index + 1} has ${what}; its compiled clients changed shape, so adapt e2e/compatibility/sdk-calls.ts`,
  );
}

const httpMethodOrder = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

// By code point, not locale: the order (and so docs/compatibility.md) is the same on every machine.
const compareText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

function compareCalls(a: SdkCall, b: SdkCall): number {
  return (
    compareText(a.client, b.client) ||
    compareText(a.path, b.path) ||
    httpMethodOrder.indexOf(a.httpMethod) - httpMethodOrder.indexOf(b.httpMethod)
  );
}
