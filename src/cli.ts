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
import { ConfigError } from './config/config.js';

const HELP = `cinv: Configuration Inventory Service

Usage: cinv <command> [options]

Commands:
  serve                     API and web interface (/ui/), collection worker, scheduled jobs, migrations, and the indexer
                            when OPENSEARCH_URL is set (npm start)
  api                       the API and web interface only (no scheduled jobs)
  worker                    scheduled jobs only (collections, lifecycle sweeps, statistics refresh)
  indexer                   the outbox indexer only: mirrors change records into OpenSearch
  migrate                   apply pending database migrations and exit
  keys create --tier adm|svc|ro --name NAME [--scope SOURCE[:INSTANCE]]... [--permission RESOURCE:ACTION]...
              [--expires-in DURATION]
                            create an API key and print it once (permissions: svc keys; scopes: svc and ro keys;
                            --scope '*' grants every source)
  keys list [--include-revoked]
                            the API keys (never their secrets): id, tier, name, hint, created, expiry, last use
  keys revoke ID            revoke an API key; it is refused from the next request on
  keys rotate-master        re-wrap the data keys of source credentials under CINV_MASTER_KEY (the old key
                            in CINV_MASTER_KEY_PREVIOUS); safe to interrupt and run again
  keys generate [--tier adm]
                            print a fresh key without storing it (for CINV_BOOTSTRAP_ADMIN_KEY)
  users promote EMAIL       make the user with this email a superadmin (the first one; later ones are
                            granted through the API by a superadmin)
  ingest --source NAME --file FILE [--scope INSTANCE] [--mode snapshot|delta] [--collector-type TYPE]
                            reconcile a universal-format snapshot file into the inventory
  sweep                     run the lifecycle sweep once (inactive, archive, remove)
  refresh-stats             bring the statistics pre-aggregate up to date now
  reindex [--resume] [--delete-old] [--batch-size N]
                            rebuild the OpenSearch index from PostgreSQL into a new index, verify it,
                            and move the alias to it (--resume continues an interrupted reindex)
  outbox                    show the outbox backlog, lag and parked rows
  outbox retry              re-queue the parked rows

Without DATABASE_URL every command uses the embedded database in CINV_DATA_DIR (default ./data);
while a server runs on it, commands reach it through the server's socket.
Environment variables are listed in the README.`;

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
} as const;

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  const flags = values as Flags;
  const [command, sub] = positionals;
  if (values.help || !command) {
    console.log(HELP);
    return command || values.help ? 0 : 1;
  }
  switch (`${command}${sub ? ` ${sub}` : ''}`) {
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
      await outboxCommand(sub);
      return 0;
    case 'refresh-stats':
      await refreshStatsCommand();
      return 0;
    case 'migrate':
      await migrateCommand();
      return 0;
    case 'keys create':
      await keysCreateCommand(flags);
      return 0;
    case 'keys list':
      await keysListCommand(flags);
      return 0;
    case 'keys rotate-master':
      await rotateMasterCommand();
      return 0;
    case 'keys revoke':
      await keysRevokeCommand(positionals[2]);
      return 0;
    case 'users promote':
      await usersPromoteCommand(positionals[2]);
      return 0;
    case 'keys generate':
      keysGenerateCommand(flags);
      return 0;
    case 'ingest':
      await ingestCommand(flags);
      return 0;
    case 'sweep':
      await sweepCommand();
      return 0;
    default:
      throw new UsageError(`unknown command "${positionals.join(' ')}"`);
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    if (error instanceof UsageError || error instanceof ConfigError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      console.error(`cinv: ${(error as Error).message}\nRun \`cinv --help\` for usage.`);
      process.exit(2);
    }
    console.error(`cinv: ${(error as Error).message}`);
    process.exit(1);
  },
);
