// The admin commands behind one entry point (the compose file's admin-cli service):
//   node services/admin-cli/src/main.ts bootstrap --tenant-name NAME --owner-email EMAIL
//   node services/admin-cli/src/main.ts rebuild-read-models
//   node services/admin-cli/src/main.ts keys status|rewrap|rotate-tenant …|reencrypt-token …
//   node services/admin-cli/src/main.ts verify-log [--from-tree-head N:HASH] [--public-key BASE64]
const commands: Record<string, string> = {
  bootstrap: './bootstrap.ts',
  'rebuild-read-models': './rebuild-read-models.ts',
  keys: './keys.ts',
  'verify-log': './verify-log.ts',
};
const [command, ...rest] = process.argv.slice(2);
const module = command === undefined ? undefined : commands[command];
if (module === undefined) {
  console.error(`usage: admin-cli <${Object.keys(commands).join('|')}> [options]`);
  process.exit(command === '--help' ? 0 : 2);
}
// The command reads its options from process.argv as when run on its own.
process.argv = [process.argv[0] ?? 'node', new URL(module, import.meta.url).pathname, ...rest];
await import(module);
