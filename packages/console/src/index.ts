import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import type express from 'express';
import { notFound } from '@tokenvault/platform';

// GET /console: the members' web console. Its script is plain TypeScript (src/app) bundled by
// esbuild from the package's own files when the gateway starts (in memory: nothing built is
// committed, so it is never stale); its stylesheet is a file. Everything comes from this origin,
// under a CSP with no inline script or style.

const appDir = fileURLToPath(new URL('../app/', import.meta.url));

const page = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Tokenvault console</title>
<link rel="icon" href="/console/assets/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/console/assets/console.css">
<script type="module" src="/console/assets/console.js"></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header><span class="brand">Tokenvault</span><nav id="nav" aria-label="Console"></nav></header>
<main id="main" tabindex="-1"></main>
</body>
</html>
`;

const headers: Record<string, string> = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
  'cache-control': 'no-store',
};

/** The console's script, bundled once per process. */
export async function bundleConsole(): Promise<string> {
  const result = await build({
    entryPoints: [`${appDir}main.ts`],
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    minify: true,
    legalComments: 'none',
  });
  return result.outputFiles[0]!.text;
}

/**
 * Mounts /console (and /sign-in, where sign-in e-mails link to) with its two assets. The bundle is
 * built at once, in the background (tens of milliseconds); a request for it waits for it.
 */
export function mountConsole(app: express.Express): void {
  const script = bundleConsole();
  script.catch(() => {}); // Reported to whoever asks for the script.
  const assets = new Map([
    ['console.js', { type: 'text/javascript; charset=utf-8', body: script }],
    [
      'favicon.svg',
      { type: 'image/svg+xml', body: Promise.resolve(readFileSync(`${appDir}favicon.svg`, 'utf8')) },
    ],
    [
      'console.css',
      {
        type: 'text/css; charset=utf-8',
        body: Promise.resolve(readFileSync(`${appDir}console.css`, 'utf8')),
      },
    ],
  ]);
  const sendPage = (_req: express.Request, res: express.Response) => {
    res.set(headers).type('html').send(page);
  };
  app.get('/console', sendPage);
  app.get('/sign-in', sendPage);
  app.get('/console/assets/:file', async (req, res) => {
    const asset = assets.get(String(req.params.file));
    if (!asset) throw notFound('No such asset.');
    res
      .set(headers)
      .type(asset.type)
      .send(await asset.body);
  });
}
