#!/usr/bin/env node
import { installChangeRules } from './history/change-rules/service.js';
import { readFileSync } from 'node:fs';
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
  qualityRecountCommand,
  serveCommand,
  sweepCommand,
  demoCommand,
  UsageError,
  type Flags,
} from './cli/commands.js';
import {
  commandHelp,
  familyHelp,
  findCommand,
  findFamily,
  globalHelp,
  unknownOption,
  unknownOptionMessage,
  type CommandUsage,
} from './cli/usage.js';
import { refuseStrayDatabase } from './cli/shared.js';
import { queryCommand } from './cli/query.js';
import { ConfigError, databaseTarget } from './platform/config/config.js';
import { packagePath } from './platform/paths.js';

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
  query: (flags, text) => queryCommand(text, flags),
  sweep: (flags) => sweepCommand(flags),
  'refresh-stats': (flags) => refreshStatsCommand(flags),
  reindex: (flags) => reindexCommand(flags),
  'quality recount': (flags) => qualityRecountCommand(flags),
  outbox: (flags) => outboxCommand(undefined, flags),
  'outbox retry': (flags) => outboxCommand('retry', flags),
};

const OPTIONS = {
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean' },
  json: { type: 'boolean' },
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
  fix: { type: 'boolean' },
  tenant: { type: 'string' },
  'batch-size': { type: 'string' },
  'include-revoked': { type: 'boolean' },
  'new-database': { type: 'boolean' },
  remove: { type: 'boolean' },
  'as-of': { type: 'string' },
  'compare-to': { type: 'string' },
  format: { type: 'string' },
  limit: { type: 'string' },
  explain: { type: 'boolean' },
  'allow-scan': { type: 'boolean' },
} as const;

/**
 * The usage error of an option the parser does not know at all (`--nme`): parsed again leniently to
 * find the command it was given to and the option, so that the error names both.
 */
function unknownOptionError(argv: string[]): UsageError {
  const { positionals, tokens } = parseArgs({
    args: argv,
    options: OPTIONS,
    allowPositionals: true,
    strict: false,
    tokens: true,
  });
  const usage = findCommand(positionals.filter((word) => word !== 'help'));
  const stray = tokens.find((token) => token.kind === 'option' && !(token.name in OPTIONS));
  const given = stray?.kind === 'option' ? stray.rawName : (argv.find((arg) => arg.startsWith('-')) ?? '');
  return new UsageError(unknownOptionMessage(usage, given), usage?.name);
}

/** `cinv help [command]`: the general help, a command group's or a command's. */
function help(words: string[]): string {
  if (words.length === 0) return globalHelp();
  const usage = findCommand(words);
  if (usage && words.length === usage.name.split(' ').length) return commandHelp(usage);
  if (words.length === 1 && findFamily(words[0]!).length > 0) return familyHelp(words[0]!);
  throw new UsageError(`unknown command "${words.join(' ')}"`);
}

const version = (): string =>
  (JSON.parse(readFileSync(packagePath('package.json'), 'utf8')) as { version: string }).version;

async function main(argv: string[]): Promise<number> {
  // every command that writes history (the demo, imports, a server) shapes it by the tenant's change rules
  installChangeRules();
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (error) {
    if ((error as { code?: string }).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') throw unknownOptionError(argv);
    throw error;
  }
  const { values, positionals } = parsed;
  const flags = values as Flags;
  const [command] = positionals;
  if (!command) {
    const stray = Object.keys(values).find((option) => option !== 'help' && option !== 'version');
    if (stray) throw new UsageError(unknownOptionMessage(undefined, `--${stray}`));
    if (values.version) {
      console.log(`cinv ${version()}`);
      return 0;
    }
    if (values.help) console.log(globalHelp());
    else console.error(globalHelp());
    return values.help ? 0 : 1;
  }
  if (command === 'help') {
    const stray = Object.keys(values).find((option) => option !== 'help');
    if (stray) throw new UsageError(unknownOptionMessage(undefined, `--${stray}`));
    console.log(help(positionals.slice(1)));
    return 0;
  }
  const usage = findCommand(positionals);
  if (!usage) {
    const family = findFamily(command);
    if (family.length > 0 && positionals.length === 1 && values.help) {
      console.log(familyHelp(command));
      return 0;
    }
    throw new UsageError(
      family.length > 0
        ? `"cinv ${command}" needs one of: ${family.join(', ')}`
        : `unknown command "${positionals.join(' ')}"`,
    );
  }
  if (values.help) {
    console.log(commandHelp(usage));
    return 0;
  }
  const stray = unknownOption(usage, Object.keys(values));
  if (stray) throw new UsageError(unknownOptionMessage(usage, `--${stray}`), usage.name);
  const words = usage.name.split(' ').length + (usage.args ? 1 : 0);
  if (positionals.length > words)
    throw new UsageError(`"cinv ${usage.name}" takes no argument "${positionals[words]}"`, usage.name);
  await refuseBeforeConfig(usage, flags);
  await RUN[usage.name]!(flags, positionals[usage.name.split(' ').length]);
  return 0;
}

/**
 * A command that opens the database is refused before anything is read or written when it would
 * create a stray embedded database (see refuseStrayDatabase): the configuration it loads next
 * writes the data directory's secret and master key.
 */
async function refuseBeforeConfig(usage: CommandUsage, flags: Flags): Promise<void> {
  if (usage.database) await refuseStrayDatabase(databaseTarget(process.env), flags);
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    if (
      error instanceof UsageError ||
      error instanceof ConfigError ||
      (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')
    ) {
      const command = error instanceof UsageError ? error.command : undefined;
      console.error(`cinv: ${(error as Error).message}\nRun \`cinv ${command ? `${command} ` : ''}--help\` for usage.`);
      process.exit(2);
    }
    console.error(`cinv: ${(error as Error).message}`);
    process.exit(1);
  },
);
