import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type express from 'express';
import { notFound } from './errors.ts';

// GET /docs: the API reference, Swagger UI (npm package swagger-ui-dist) rendering /openapi.json.
// Everything it loads comes from this service (/docs/assets/…, read from node_modules once at
// start), under a CSP that allows scripts, styles and fetches from the service's own origin only:
// no CDN, no inline script, no call to Swagger's online validator.

const swaggerUiDir = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));

/** Swagger UI's start-up, as a file of its own (no inline script under the CSP). */
const initializer = `window.addEventListener('load', function () {
  window.ui = SwaggerUIBundle({
    url: '/openapi.json',
    dom_id: '#swagger-ui',
    deepLinking: true,
    docExpansion: 'list',
    defaultModelsExpandDepth: -1,
    displayRequestDuration: true,
    showExtensions: true,
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis],
    layout: 'BaseLayout',
  });
});
`;

const page = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Tokenvault API reference</title>
<link rel="stylesheet" href="/docs/assets/swagger-ui.css">
<link rel="stylesheet" href="/docs/assets/docs.css">
<link rel="icon" type="image/png" href="/docs/assets/favicon-32x32.png">
</head>
<body>
<noscript>The API reference needs JavaScript; the document itself is at <a href="/openapi.json">/openapi.json</a>.</noscript>
<div id="swagger-ui"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script src="/docs/assets/docs.js"></script>
</body>
</html>
`;

interface Asset {
  type: string;
  body: Buffer;
}

function loadAssets(): Map<string, Asset> {
  const file = (name: string) => readFileSync(join(swaggerUiDir, name));
  return new Map<string, Asset>([
    ['swagger-ui-bundle.js', { type: 'text/javascript; charset=utf-8', body: file('swagger-ui-bundle.js') }],
    ['swagger-ui.css', { type: 'text/css; charset=utf-8', body: file('swagger-ui.css') }],
    ['favicon-32x32.png', { type: 'image/png', body: file('favicon-32x32.png') }],
    ['docs.js', { type: 'text/javascript; charset=utf-8', body: Buffer.from(initializer) }],
    // The permission line each description starts with stands out.
    [
      'docs.css',
      {
        type: 'text/css; charset=utf-8',
        body: Buffer.from('.swagger-ui .opblock-description-wrapper p:first-child code{font-weight:700}\n'),
      },
    ],
  ]);
}

const headers: Record<string, string> = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; " +
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
};

/** GET /docs and GET /docs/assets/:file (no API key: the reference holds no tenant data). */
export function mountApiDocs(app: express.Express): void {
  const assets = loadAssets();
  app.get('/docs', (_req, res) => {
    res.set(headers).type('html').send(page);
  });
  app.get('/docs/assets/:file', (req, res) => {
    const asset = assets.get(String(req.params.file));
    if (!asset) throw notFound('No such asset.');
    // No tenant data in them: cacheable, unlike every other response.
    res
      .set({ ...headers, 'cache-control': 'public, max-age=3600' })
      .type(asset.type)
      .send(asset.body);
  });
}
