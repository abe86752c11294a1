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
  demoCommand,
  UsageError,
  type Flags,
} from './cli/commands.js';
import { commandHelp, findCommand, findFamily, globalHelp, unknownOption } from './cli/usage.js';
import { ConfigError } from './config/config.js';

type Run = (flags: Flags, argument: string | undefined) => Promise<void> | void;

/** What each command of the usage table runs. */
const RUN: Record<string, Run> = {
  serve: () => serveCommand({ api: true, scheduler: true, indexer: true }),
  api: () => serveCommand({ api: true, scheduler: false, indexer: false }),
  worker: () => serveCommand({ api: false, scheduler: true, indexer: false }),
  indexer: () => serveCommand({ api: false, scheduler: false, indexer: true }),
  migrate: (flags) => migrateCommand(flags),
  'keys create': (flags) => keysCreateCommand(flags),
  'keys list': (flags) => keysListCommand(flags),
  'keys revoke': (flags, id) => keysRevokeCommand(id, flags),
  'keys rotate-master': (flags) => rotateMasterCommand(flags),
  'keys generate': (flags) => keysGenerateCommand(flags),
  'users promote': (flags, email) => usersPromoteCommand(email, flags),
  ingest: (flags) => ingestCommand(flags),
  demo: (flags) => demoCommand(flags),
  sweep: (flags) => sweepCommand(flags),
  'refresh-stats': (flags) => refreshStatsCommand(flags),
  reindex: (flags) => reindexCommand(flags),
  outbox: (flags) => outboxCommand(undefined, flags),
  'outbox retry': (flags) => outboxCommand('retry', flags),
};

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
  remove: { type: 'boolean' },
} as const;

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  const flags = values as Flags;
  const [command] = positionals;
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
  await RUN[usage.name]!(flags, positionals[usage.name.split(' ').length]);
  return 0;
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
