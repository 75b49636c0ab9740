// A strict reader of the Prometheus text exposition format (version 0.0.4), enough for tests:
// every line is blank, a `# HELP` / `# TYPE` comment, or a sample `name{label="value",…} value`.

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Exposition {
  samples: Sample[];
  /** TYPE of each metric family, by its name. */
  types: Map<string, string>;
  help: Map<string, string>;
  /** The sum of the samples of this name whose labels include these. */
  value(name: string, labels?: Record<string, string>): number;
}

const metricName = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const sampleLine = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? ([^ ]+)(?: -?\d+)?$/;
const labelPair = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"(,|$)/y;
const types = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);

function parseValue(text: string, line: string): number {
  // As Prometheus reads them (Go's ParseFloat): NaN and Inf in any case (prom-client writes `Nan`).
  if (/^nan$/i.test(text)) return NaN;
  if (/^[+-]?inf(inity)?$/i.test(text)) return text.startsWith('-') ? -Infinity : Infinity;
  const value = Number(text);
  if (text === '' || Number.isNaN(value)) throw new Error(`not a sample value: ${line}`);
  return value;
}

function parseLabels(text: string, line: string): Record<string, string> {
  const labels: Record<string, string> = {};
  labelPair.lastIndex = 0;
  while (labelPair.lastIndex < text.length) {
    const start = labelPair.lastIndex;
    const match = labelPair.exec(text);
    if (!match || match.index !== start) throw new Error(`malformed labels: ${line}`);
    const [, name = '', raw = ''] = match;
    if (name in labels) throw new Error(`label ${name} twice: ${line}`);
    labels[name] = raw.replace(/\\(["\\n])/g, (_, c: string) => (c === 'n' ? '\n' : c));
  }
  return labels;
}

export function parsePrometheusText(text: string): Exposition {
  const samples: Sample[] = [];
  const typeOf = new Map<string, string>();
  const help = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    if (line.startsWith('#')) {
      const comment = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line);
      if (!comment) continue; // other comments are allowed
      const [, kind, name = '', rest = ''] = comment;
      if (!metricName.test(name)) throw new Error(`bad metric name: ${line}`);
      if (kind === 'TYPE') {
        if (!types.has(rest)) throw new Error(`unknown type: ${line}`);
        typeOf.set(name, rest);
      } else help.set(name, rest);
      continue;
    }
    const match = sampleLine.exec(line);
    if (!match) throw new Error(`not a sample line: ${line}`);
    const [, name = '', labels, value = ''] = match;
    samples.push({ name, labels: labels ? parseLabels(labels, line) : {}, value: parseValue(value, line) });
  }
  return {
    samples,
    types: typeOf,
    help,
    value(name, labels = {}) {
      return samples
        .filter(
          (sample) =>
            sample.name === name &&
            Object.entries(labels).every(([key, value]) => sample.labels[key] === value),
        )
        .reduce((sum, sample) => sum + sample.value, 0);
    },
  };
}
