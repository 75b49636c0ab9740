// A real single-node Apache Kafka broker (KRaft, no ZooKeeper, no Docker) for development and
// tests. The jars come from Maven Central through Maven (pom.xml beside this file) into
// .cache/jars, once; each broker keeps its storage, config, pid and output in a folder of its own.
//
//   node infra/kafka/kafka.mjs start    # starts in the background, prints the bootstrap address
//   node infra/kafka/kafka.mjs stop
//   node infra/kafka/kafka.mjs status
//
// Env: KAFKA_PORT (19092), KAFKA_CONTROLLER_PORT (KAFKA_PORT + 1), KAFKA_HEAP (512m).
// The functions are exported for the test setup (vitest.config.ts) and the benchmark.
import { execFileSync, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
export const cacheDir = join(here, '.cache');
const jarsDir = join(cacheDir, 'jars');
const pomFile = join(here, 'pom.xml');

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Copies the broker's jars into .cache/jars once (again only when pom.xml changes). */
export function fetchJars({ quiet = false } = {}) {
  const pomHash = createHash('sha256').update(readFileSync(pomFile)).digest('hex');
  const marker = join(jarsDir, '.complete');
  if (existsSync(marker) && readFileSync(marker, 'utf8').trim() === pomHash) return jarsDir;
  rmSync(jarsDir, { recursive: true, force: true });
  if (!quiet) process.stderr.write('[kafka] fetching Apache Kafka jars from Maven Central (once)…\n');
  execFileSync(
    'mvn',
    [
      '-q',
      '-B',
      '-Dstyle.color=never',
      '-f',
      pomFile,
      'dependency:copy-dependencies',
      `-DoutputDirectory=${jarsDir}`,
      '-DincludeScope=runtime',
    ],
    { stdio: ['ignore', quiet ? 'ignore' : 'inherit', 'inherit'] },
  );
  writeFileSync(marker, `${pomHash}\n`);
  return jarsDir;
}

/** Where a broker keeps everything: one folder per broker. */
export function brokerDir(port) {
  return join(cacheDir, `broker-${port}`);
}

function readPid(dir) {
  try {
    const pid = Number(readFileSync(join(dir, 'broker.pid'), 'utf8').trim());
    return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** A free TCP port on 127.0.0.1. */
export async function freePort() {
  const server = createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * True when the broker answers a Kafka ApiVersions request (so it processes requests, not merely
 * accepts connections).
 */
export function probe(port, timeoutMs = 2_000) {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    const done = (ok) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.on('error', () => done(false));
    let received = Buffer.alloc(0);
    socket.on('data', (chunk) => {
      received = Buffer.concat([received, chunk]);
      // size (int32), correlation id (int32), error code (int16)
      if (received.length >= 10) done(received.readInt32BE(4) === 7 && received.readInt16BE(8) === 0);
    });
    socket.on('connect', () => {
      const clientId = Buffer.from('probe');
      const body = Buffer.alloc(2 + 2 + 4 + 2);
      body.writeInt16BE(18, 0); // ApiVersions
      body.writeInt16BE(0, 2); // v0
      body.writeInt32BE(7, 4); // correlation id
      body.writeInt16BE(clientId.length, 8);
      const request = Buffer.concat([body, clientId]);
      const size = Buffer.alloc(4);
      size.writeInt32BE(request.length, 0);
      socket.write(Buffer.concat([size, request]));
    });
  });
}

function serverProperties({ port, controllerPort, dir }) {
  return [
    'process.roles=broker,controller',
    'node.id=1',
    `controller.quorum.voters=1@127.0.0.1:${controllerPort}`,
    `listeners=PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${controllerPort}`,
    `advertised.listeners=PLAINTEXT://127.0.0.1:${port}`,
    'listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
    'controller.listener.names=CONTROLLER',
    'inter.broker.listener.name=PLAINTEXT',
    `log.dirs=${join(dir, 'data')}`,
    'num.partitions=3',
    'offsets.topic.replication.factor=1',
    'offsets.topic.num.partitions=3',
    'transaction.state.log.replication.factor=1',
    'transaction.state.log.min.isr=1',
    'group.initial.rebalance.delay.ms=0',
    'auto.create.topics.enable=false',
    'log.retention.hours=24',
    'log.segment.bytes=16777216',
    '',
  ].join('\n');
}

const log4jProperties = [
  'log4j.rootLogger=WARN, stdout',
  'log4j.appender.stdout=org.apache.log4j.ConsoleAppender',
  'log4j.appender.stdout.layout=org.apache.log4j.PatternLayout',
  'log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n',
  'log4j.logger.kafka.server.KafkaServer=INFO',
  'log4j.logger.kafka.server.BrokerServer=INFO',
  '',
].join('\n');

/**
 * Starts a broker on 127.0.0.1:port in the background and resolves once it serves requests.
 * A broker already running from the same folder is left as it is (a no-op). `fresh` wipes the
 * folder's storage first.
 */
export async function startBroker({
  port = 19092,
  controllerPort = port + 1,
  dir = brokerDir(port),
  heap = process.env.KAFKA_HEAP ?? '512m',
  fresh = false,
  timeoutMs = 120_000,
  quiet = false,
} = {}) {
  const bootstrap = `127.0.0.1:${port}`;
  const running = readPid(dir);
  if (running && alive(running)) {
    if (await waitReady(port, running, dir, timeoutMs))
      return { bootstrap, pid: running, dir, started: false };
  }
  const jars = fetchJars({ quiet });
  if (fresh) rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const config = join(dir, 'server.properties');
  writeFileSync(config, serverProperties({ port, controllerPort, dir }));
  writeFileSync(join(dir, 'log4j.properties'), log4jProperties);
  const classpath = `${jars}/*`;
  const javaArgs = [
    `-Xmx${heap}`,
    `-Xms${heap === '512m' ? '256m' : heap}`,
    '-XX:+UseSerialGC',
    '-XX:TieredStopAtLevel=1',
    '-Djava.awt.headless=true',
    `-Dlog4j.configuration=file:${join(dir, 'log4j.properties')}`,
    `-Dkafka.logs.dir=${join(dir, 'logs')}`,
    '-cp',
    classpath,
  ];
  if (!existsSync(join(dir, 'data', 'meta.properties'))) {
    const clusterId = randomBytes(16).toString('base64url').slice(0, 22);
    execFileSync(
      'java',
      [
        ...javaArgs,
        'kafka.tools.StorageTool',
        'format',
        `--cluster-id=${clusterId}`,
        '-c',
        config,
        '--ignore-formatted',
      ],
      { stdio: ['ignore', 'ignore', 'inherit'] },
    );
  }
  const output = openSync(join(dir, 'broker.out'), 'a');
  const child = spawn('java', [...javaArgs, 'kafka.Kafka', config], {
    detached: true,
    stdio: ['ignore', output, output],
  });
  closeSync(output);
  child.unref();
  writeFileSync(join(dir, 'broker.pid'), `${child.pid}\n`);
  if (!(await waitReady(port, child.pid, dir, timeoutMs))) {
    await stopBroker({ port, dir });
    throw new Error(`kafka broker on ${bootstrap} not ready after ${timeoutMs} ms:\n${tail(dir)}`);
  }
  return { bootstrap, pid: child.pid, dir, started: true };
}

async function waitReady(port, pid, dir, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!alive(pid)) throw new Error(`kafka broker exited while starting:\n${tail(dir)}`);
    if (await probe(port)) return true;
    await sleep(250);
  }
  return false;
}

function tail(dir) {
  try {
    return readFileSync(join(dir, 'broker.out'), 'utf8').slice(-4_000);
  } catch {
    return '(no output)';
  }
}

/** Stops the broker of a folder (SIGTERM: a clean shutdown; SIGKILL after timeoutMs). */
export async function stopBroker({
  port = 19092,
  dir = brokerDir(port),
  timeoutMs = 30_000,
  remove = false,
} = {}) {
  const pid = readPid(dir);
  let stopped = false;
  if (pid && alive(pid)) {
    process.kill(pid, 'SIGTERM');
    const deadline = Date.now() + timeoutMs;
    while (alive(pid) && Date.now() < deadline) await sleep(100);
    if (alive(pid)) process.kill(pid, 'SIGKILL');
    while (alive(pid)) await sleep(50);
    stopped = true;
  }
  rmSync(join(dir, 'broker.pid'), { force: true });
  if (remove) rmSync(dir, { recursive: true, force: true });
  return stopped;
}

async function main() {
  const command = process.argv[2];
  const port = Number(process.env.KAFKA_PORT ?? 19092);
  const controllerPort = Number(process.env.KAFKA_CONTROLLER_PORT ?? port + 1);
  if (command === 'start') {
    const { bootstrap, started } = await startBroker({ port, controllerPort });
    process.stderr.write(started ? '[kafka] broker ready\n' : '[kafka] broker already running\n');
    process.stdout.write(`${bootstrap}\n`);
  } else if (command === 'stop') {
    const stopped = await stopBroker({ port });
    process.stderr.write(stopped ? '[kafka] broker stopped\n' : '[kafka] no broker running\n');
  } else if (command === 'status') {
    const ready = await probe(port);
    process.stdout.write(ready ? `running on 127.0.0.1:${port}\n` : 'not running\n');
    process.exitCode = ready ? 0 : 1;
  } else {
    process.stderr.write('usage: node infra/kafka/kafka.mjs start|stop|status\n');
    process.exitCode = 2;
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await main();
