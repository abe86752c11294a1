#!/usr/bin/env node
import { parseArgs } from 'node:util';
import {
  ingestCommand,
  keysCreateCommand,
  keysListCommand,
  keysRevokeCommand,
  rotateMasterCommand,
  usersPromoteCommand,
  keysGenerateCommand,
  migrateCommand,
  outboxCommand,
  refreshStatsCommand,
  reindexCommand,
  serveCommand,
  sweepCommand,
  UsageError,
  type Flags,
} from './cli/commands.js';
import { commandHelp, findCommand, findFamily, globalHelp, unknownOption } from './cli/usage.js';
import { ConfigError } from './config/config.js';

const OPTIONS = {
  help: { type: 'boolean', short: 'h' },
  tier: { type: 'string' },
  name: { type: 'string' },
  scope: { type: 'string', multiple: true },
  permission: { type: 'string', multiple: true },
  'expires-in': { type: 'string' },
  source: { type: 'string' },
  file: { type: 'string' },
  mode: { type: 'string' },
  'collector-type': { type: 'string' },
  resume: { type: 'boolean' },
  'delete-old': { type: 'boolean' },
  'batch-size': { type: 'string' },
  'include-revoked': { type: 'boolean' },
  'new-database': { type: 'boolean' },
} as const;

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  const flags = values as Flags;
  const [command, sub] = positionals;
  if (!command) {
    if (values.help) console.log(globalHelp());
    else console.error(globalHelp());
    return values.help ? 0 : 1;
  }
  const usage = findCommand(positionals);
  if (!usage) {
    const family = findFamily(command);
    throw new UsageError(family.length > 0 ? `"cinv ${command}" needs one of: ${family.join(', ')}` : `unknown command "${positionals.join(' ')}"`);
  }
  if (values.help) {
    console.log(commandHelp(usage));
    return 0;
  }
  const stray = unknownOption(usage, Object.keys(values));
  if (stray) throw new UsageError(`"cinv ${usage.name}" takes no option --${stray}`, usage.name);
  const words = usage.name.split(' ').length + (usage.args ? 1 : 0);
  if (positionals.length > words) throw new UsageError(`"cinv ${usage.name}" takes no argument "${positionals[words]}"`, usage.name);
  switch (usage.name) {
    case 'serve':
      await serveCommand({ api: true, scheduler: true, indexer: true });
      return 0;
    case 'api':
      await serveCommand({ api: true, scheduler: false, indexer: false });
      return 0;
    case 'worker':
      await serveCommand({ api: false, scheduler: true, indexer: false });
      return 0;
    case 'indexer':
      await serveCommand({ api: false, scheduler: false, indexer: true });
      return 0;
    case 'reindex':
      await reindexCommand(flags);
      return 0;
    case 'outbox':
    case 'outbox retry':
      await outboxCommand(sub, flags);
      return 0;
    case 'refresh-stats':
      await refreshStatsCommand(flags);
      return 0;
    case 'migrate':
      await migrateCommand(flags);
      return 0;
    case 'keys create':
      await keysCreateCommand(flags);
      return 0;
    case 'keys list':
      await keysListCommand(flags);
      return 0;
    case 'keys rotate-master':
      await rotateMasterCommand(flags);
      return 0;
    case 'keys revoke':
      await keysRevokeCommand(positionals[2], flags);
      return 0;
    case 'users promote':
      await usersPromoteCommand(positionals[2], flags);
      return 0;
    case 'keys generate':
      keysGenerateCommand(flags);
      return 0;
    case 'ingest':
      await ingestCommand(flags);
      return 0;
    case 'sweep':
      await sweepCommand(flags);
      return 0;
    default:
      throw new UsageError(`unknown command "${positionals.join(' ')}"`);
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    if (error instanceof UsageError || error instanceof ConfigError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      const command = error instanceof UsageError ? error.command : undefined;
      console.error(`cinv: ${(error as Error).message}\nRun \`cinv ${command ? `${command} ` : ''}--help\` for usage.`);
      process.exit(2);
    }
    console.error(`cinv: ${(error as Error).message}`);
    process.exit(1);
  },
);
