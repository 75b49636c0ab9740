import { z } from 'zod';
import { cloudEventType } from './cloud-event.ts';
import { eventTopics, publicEvents } from './public-events.ts';

/** docs/events.md, generated from publicEvents (a unit test keeps the file up to date). */
export function renderEventsDoc(): string {
  const lines: string[] = [];
  for (const topic of eventTopics) {
    lines.push(`## \`<prefix>.${topic}\``, '');
    const entries = Object.entries(publicEvents).filter(([, entry]) => entry.topic === topic);
    if (entries.length === 0) {
      lines.push('No events yet.', '');
      continue;
    }
    for (const [type, entry] of entries) {
      lines.push(`### ${type}`, '');
      lines.push(`${entry.description}`, '');
      lines.push(`Type \`${cloudEventType(topic, type)}\`; entity \`${entry.entity}\`.`, '');
      lines.push('| Field | Type | Required | Meaning |', '| --- | --- | --- | --- |');
      const json = z.toJSONSchema(entry.schema, { io: 'output', unrepresentable: 'any' }) as JsonSchema;
      const required = new Set(json.required ?? []);
      for (const [field, property] of Object.entries(json.properties ?? {})) {
        lines.push(
          `| \`${field}\` | ${typeName(property)} | ${required.has(field) ? 'yes' : 'no'} | ${property.description ?? ''} |`,
        );
      }
      lines.push('');
    }
  }
  return lines.join('\n');
}

interface JsonSchema {
  type?: string | string[];
  enum?: unknown[];
  const?: unknown;
  items?: JsonSchema;
  properties?: Record<string, JsonSchema>;
  additionalProperties?: JsonSchema | boolean;
  required?: string[];
  description?: string;
}

function typeName(schema: JsonSchema): string {
  if (schema.enum) return schema.enum.map((value) => `\`${String(value)}\``).join(' \\| ');
  if (schema.type === 'array') return `array of ${schema.items ? typeName(schema.items) : 'any'}`;
  if (schema.type === 'object' && schema.properties)
    return `{ ${Object.entries(schema.properties)
      .map(([name, property]) => `${name}: ${typeName(property)}`)
      .join(', ')} }`;
  if (schema.type === 'object' && typeof schema.additionalProperties === 'object')
    return `map of ${typeName(schema.additionalProperties)}`;
  return Array.isArray(schema.type) ? schema.type.join(' \\| ') : (schema.type ?? 'any');
}
