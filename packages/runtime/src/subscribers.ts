import type { Config, Logger, Pool } from '@tokenvault/platform';
import type { EventStore } from '@tokenvault/eventstore';
import { KafkaRelay } from '@tokenvault/relay';
import { createTreeHeadSigner, LogSigningKey } from '@tokenvault/verifiable-log';
import { Projector, type EventProcessor } from '@tokenvault/cqrs';
import { projectorProjections, readModelsProjectorName } from './projections.ts';

// The subscribers of the event log: each keeps its checkpoint in projection_checkpoints.

/** The projector of the read models (only the trailing ones with PROJECTIONS=inline). */
export function readModelsProjector(
  config: Config,
  connection: { store: EventStore; pool: Pool },
  logger: Logger,
): Projector {
  return new Projector({
    name: readModelsProjectorName,
    store: connection.store,
    pool: connection.pool,
    projections: projectorProjections(config),
    logger,
    leaseMs: config.PROCESSOR_LEASE_MS,
  });
}

/** The Kafka relay to `brokers` (KAFKA_BROKERS), its topics as configured. */
export function relayFor(
  brokers: string,
  config: Pick<Config, 'KAFKA_TOPIC_PREFIX' | 'KAFKA_TOPIC_PARTITIONS' | 'PROCESSOR_LEASE_MS'>,
  connection: { store: EventStore; pool: Pool },
  logger: Logger,
): KafkaRelay {
  return new KafkaRelay({
    store: connection.store,
    pool: connection.pool,
    logger,
    brokers,
    topicPrefix: config.KAFKA_TOPIC_PREFIX,
    partitions: config.KAFKA_TOPIC_PARTITIONS,
    leaseMs: config.PROCESSOR_LEASE_MS,
  });
}

/** The tree heads' signing key, when LOG_SIGNING_KEY is set. */
export const logSigningKeyOf = (config: Config): LogSigningKey | undefined =>
  config.LOG_SIGNING_KEY ? new LogSigningKey(config.LOG_SIGNING_KEY) : undefined;

/** The tree-head signer (docs/verifiable-log.md), or undefined with LOG_TREE_HEADS=off. */
export function treeHeadSignerFor(
  config: Config,
  connection: { store: EventStore; pool: Pool },
  logger: Logger,
): EventProcessor | undefined {
  if (config.LOG_TREE_HEADS === 'off') return undefined;
  return createTreeHeadSigner({
    store: connection.store,
    pool: connection.pool,
    logger,
    batchSize: config.LOG_TREE_HEAD_BATCH_SIZE,
    intervalMs: config.LOG_TREE_HEAD_INTERVAL_MS,
    leaseMs: config.PROCESSOR_LEASE_MS,
    ...(config.LOG_SIGNING_KEY ? { signingKey: logSigningKeyOf(config)! } : {}),
  });
}
