import { badRequest, type Principal } from '@tokenvault/platform';
import { isPlainObject } from '@tokenvault/expressions';
import { outcomeBody, principalData, type CodeRunQueue, type CodeRunRequest } from '@tokenvault/code-runs';
import { reactorRunBase, reactorRunOwner, type ReactorQueries } from '@tokenvault/reactors';
import type { DestinationResponse } from '@tokenvault/destinations';
import type { ConfiguredProxy, ProxyTransform } from '../queries/configured-proxy.queries.ts';
import type { ProxiedRequest } from '../request/forwarding.ts';
import {
  answered,
  requestMessage,
  requestOfMessage,
  responseMessage,
  responseOfMessage,
  type StageAnswer,
  type StageMessage,
} from './stage-messages.ts';

/** The fields of a pre-configured proxy its stages need. */
export type StagedProxy = Pick<
  ConfiguredProxy,
  | 'id'
  | 'tenant_id'
  | 'request_reactor_id'
  | 'response_reactor_id'
  | 'request_transforms'
  | 'response_transforms'
  | 'configuration'
  | 'application_id'
>;

/** One invocation of a proxy: the proxy, who invoked (none for `require_auth: false`), the request id. */
export interface ProxyStages {
  proxy: StagedProxy;
  caller?: Principal;
  requestId: string;
}

export interface ProxyPipelineDeps {
  runs: CodeRunQueue;
  /** The runtime's ReactorDefinitions: read once, kept until a change evicts them. */
  reactors: Pick<ReactorQueries, 'get'>;
}

type Direction = 'request' | 'response';

/**
 * A configured proxy's stages, each a code run (sealed, in the worker's sandbox: code-runs):
 * on the way out the request reactor, then the request transforms in order; on the way back the
 * response reactor, then the response transforms. A stage that fails throws its problem, so nothing
 * after it happens (nothing is forwarded, or the answer is not returned).
 */
export class ProxyPipeline {
  private readonly deps: ProxyPipelineDeps;

  constructor(deps: ProxyPipelineDeps) {
    this.deps = deps;
  }

  /** The request to forward, once the request stages have rewritten it (detokenized already). */
  async runRequestStage(stages: ProxyStages, request: ProxiedRequest): Promise<ProxiedRequest> {
    const { proxy } = stages;
    if (!proxy.request_reactor_id && proxy.request_transforms.length === 0) return request;
    const message = await this.runStages(stages, 'request', requestMessage(request));
    return requestOfMessage(request.kind, message, 'request stage');
  }

  /** The answer to return, once the response stages have rewritten the destination's. */
  async runResponseStage(stages: ProxyStages, response: DestinationResponse): Promise<DestinationResponse> {
    const { proxy } = stages;
    if (!proxy.response_reactor_id && proxy.response_transforms.length === 0) return response;
    const { kind, message } = responseMessage(response);
    const rewritten = await this.runStages(stages, 'response', message);
    return responseOfMessage(response.status, kind, rewritten, 'response stage');
  }

  private async runStages(
    stages: ProxyStages,
    direction: Direction,
    message: StageMessage,
  ): Promise<StageMessage> {
    const { proxy } = stages;
    const reactorId = direction === 'request' ? proxy.request_reactor_id : proxy.response_reactor_id;
    let current = message;
    if (reactorId) {
      current = answered(
        current,
        await this.runReactor(stages, reactorId, direction, current),
        `${direction} reactor`,
      );
    }
    const transforms = direction === 'request' ? proxy.request_transforms : proxy.response_transforms;
    for (const [index, transform] of transforms.entries()) {
      const where = `${direction}_transforms[${index}]`;
      current = answered(current, await this.runTransform(stages, transform, current, where), where);
    }
    return current;
  }

  /**
   * The reactor as a react call runs it (its configuration checked against its formula, its
   * application's `svc`, its `tokenize`): `raw.body` and `raw.headers` are the new message; a
   * reactor that tokenized and answered no `raw.body` sends its tokens.
   */
  private async runReactor(
    stages: ProxyStages,
    reactorId: string,
    direction: Direction,
    message: StageMessage,
  ): Promise<StageAnswer> {
    const { proxy } = stages;
    const reactor = await this.deps.reactors.get(proxy.tenant_id, reactorId);
    if (!reactor) {
      throw invalidProxyConfiguration(`The proxy’s ${direction} reactor no longer exists.`);
    }
    const outcome = await this.deps.runs.run(proxy.tenant_id, reactorRunOwner(reactorId), {
      ...this.runBase(stages, message),
      ...reactorRunBase(reactor),
    });
    const { raw, tokens } = outcomeBody(outcome);
    const answer: StageAnswer = isPlainObject(raw) ? { ...raw } : {};
    if (tokens !== undefined && !Object.hasOwn(answer, 'body')) answer.body = tokens;
    return answer;
  }

  /** A `code` transform, with the proxy's configuration and application. */
  private async runTransform(
    stages: ProxyStages,
    transform: ProxyTransform,
    message: StageMessage,
    where: string,
  ): Promise<StageAnswer> {
    const { proxy } = stages;
    if (transform.type !== 'code') {
      throw invalidProxyConfiguration(`${where} is not a code transform.`);
    }
    const outcome = await this.deps.runs.run(proxy.tenant_id, `proxies/${proxy.id}`, {
      ...this.runBase(stages, message),
      code: transform.code,
      configuration: proxy.configuration,
      application_id: proxy.application_id ?? null,
      answers: 'headers-and-body',
    });
    // The worker answers a transform's run with the object it returned, or fails the run.
    return outcomeBody(outcome).raw as StageAnswer;
  }

  private runBase(
    stages: ProxyStages,
    message: StageMessage,
  ): Pick<CodeRunRequest, 'args' | 'caller' | 'request_id'> {
    return {
      args: { headers: message.headers, ...(message.body === undefined ? {} : { body: message.body }) },
      caller: stages.caller ? principalData(stages.caller) : anonymousCaller(stages.proxy),
      request_id: stages.requestId,
    };
  }
}

/**
 * A `require_auth: false` call has no caller: its stages act with their application only (a
 * stage without one can tokenize nothing).
 */
const anonymousCaller = (proxy: StagedProxy): CodeRunRequest['caller'] => ({
  tenantId: proxy.tenant_id,
  actorId: proxy.id,
  actorType: 'application',
  permissions: [],
  rules: [],
  tenantSettings: {},
});

/** A stage the proxy names cannot run any more (what it names is gone or of another kind). */
const invalidProxyConfiguration = (detail: string) =>
  badRequest(detail, undefined, { type: 'invalid-proxy-configuration' });
