import type express from 'express';
import {
  buildOpenApiDocument,
  collectProcessMetrics,
  createHttpApp,
  describeOperations,
  finishHttpApp,
  hoistSchemaDefinitions,
  httpProcessRequestsTotal,
  metricsHandler,
  mountApiDocs,
  mountRoutes,
  type RouteDefinition,
} from '@tokenvault/platform';
import { mountConsole } from '@tokenvault/console';
import { createRouteGuard, describeRouteGuard } from './guards/index.ts';
import { contextDocumentedOperations } from './contexts.ts';
import type { Runtime } from './runtime.ts';
import { apiExamples } from './api-examples.ts';
import { httpProcessLink, httpProcessNumber, isHttpProcess } from './http-processes.ts';

/** Every operation of the API: the runtime's routes, and what the contexts serve besides (`/proxy/**`). */
export const apiOperations = (runtime: Pick<Runtime, 'routes'>): RouteDefinition[] => [
  ...runtime.routes,
  ...contextDocumentedOperations,
];

/**
 * GET /openapi.json: every route of the runtime, its servers entry from PUBLIC_URL. Also what
 * `npm run sdk:generate` writes to packages/sdk/openapi.json.
 */
export function apiDocument(runtime: Pick<Runtime, 'routes' | 'config'>) {
  return describeOperations(
    describeRouteGuard(
      hoistSchemaDefinitions(
        buildOpenApiDocument(apiOperations(runtime), {
          title: 'Tokenvault API',
          version: '0.1.0',
          serverUrl: runtime.config.PUBLIC_URL,
        }),
      ),
    ),
    apiExamples,
  );
}

/**
 * The REST surface: every context's routes behind API-key authentication, and the service's own
 * documents: health, readiness, metrics, the OpenAPI document and its reference page.
 */
export function createGatewayApp(runtime: Runtime): express.Express {
  const openApi = apiDocument(runtime);
  collectProcessMetrics();
  // One of several HTTP processes (HTTP_PROCESSES > 1): ready while all are, /metrics of all.
  const processes = isHttpProcess() ? httpProcessLink() : undefined;
  const processNumber = httpProcessNumber();
  const app = createHttpApp({
    logger: runtime.logger,
    bodyLimit: runtime.config.BODY_LIMIT,
    trustProxy: runtime.config.TRUST_PROXY,
    corsAllowedOrigins: runtime.config.CORS_ALLOWED_ORIGINS,
    configure(app) {
      app.use((_req, _res, next) => {
        httpProcessRequestsTotal.inc({ process: processNumber });
        next();
      });
      app.get('/healthz', (_req, res) => {
        res.json({ status: 'ok' });
      });
      // A load balancer's probe: 503 while PostgreSQL or Redis does not answer within 2 s, or
      // while one of several HTTP processes is down, naming the variable to check (never an
      // address: the probe is unauthenticated).
      app.get('/readyz', async (_req, res) => {
        const answers = (probe: Promise<unknown>) =>
          Promise.race([
            probe.then(() => 'ok' as const),
            new Promise<'unavailable'>((resolve) => setTimeout(resolve, 2_000, 'unavailable').unref()),
          ]).catch(() => 'unavailable' as const);
        const [postgres, redis] = await Promise.all([
          answers(runtime.ownerPool.query('SELECT 1')),
          answers(runtime.redis.ping()),
        ]);
        const processesNotUp = processes?.notUp();
        const problems = [
          ...(postgres === 'ok' ? [] : ['DATABASE_URL: PostgreSQL does not answer']),
          ...(redis === 'ok' ? [] : ['REDIS_URL: Redis does not answer']),
          ...(processesNotUp ? [`HTTP_PROCESSES: ${processesNotUp}`] : []),
        ];
        res.status(problems.length ? 503 : 200).json({
          status: problems.length ? 'not ready' : 'ready',
          checks: {
            postgres,
            redis,
            ...(processes ? { processes: processesNotUp ? ('unavailable' as const) : ('ok' as const) } : {}),
          },
          ...(problems.length ? { problems } : {}),
        });
      });
      app.get('/openapi.json', (_req, res) => {
        res.json(openApi);
      });
      mountApiDocs(app);
      // The members' web console (sign-in links point at /sign-in).
      mountConsole(app);
      // Prometheus text (docs/metrics.md): open unless METRICS_TOKEN is set; never expose it publicly.
      app.get(
        '/metrics',
        metricsHandler({
          token: runtime.config.METRICS_TOKEN,
          ...(processes ? { gather: () => processes.metrics() } : {}),
        }),
      );
      // Any media type in and out (not a JSON route): its operations in the OpenAPI document are
      // the proxy manifest's documentedOperations.
      app.use('/proxy', runtime.proxy.handle);
    },
  });
  mountRoutes(
    app,
    runtime.routes,
    runtime.authenticate,
    createRouteGuard(runtime.redis, runtime.vault, runtime.rateLimiter, runtime.config),
  );
  finishHttpApp(app, runtime.logger);
  return app;
}
