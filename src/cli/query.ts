import { readFile } from 'node:fs/promises';
import { everyPermission, type Principal } from '../platform/auth/principal.js';
import { loadConfig } from '../platform/config/config.js';
import { csvRows } from '../platform/csv.js';
import { AppError } from '../platform/errors.js';
import { DEFAULT_TENANT_ID } from '../platform/tenants.js';
import { commandContext, printTable, single, UsageError, withDatabase, type Flags } from './shared.js';

const FORMATS = ['table', 'json', 'csv'] as const;

/** The operator at the command line: the database's whole content, as a superadmin sees it. */
const OPERATOR: Principal = {
  tenantId: DEFAULT_TENANT_ID,
  kind: 'api_key',
  id: 'command-line',
  name: 'command line',
  tier: 'adm',
  superadmin: true,
  permissions: everyPermission(),
  scopes: 'all',
};

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** The query from the argument, `--file`, or standard input (`-`, or no argument with a pipe). */
async function queryText(argument: string | undefined, flags: Flags): Promise<string> {
  const file = single(flags, 'file', false);
  if (file && argument) throw new UsageError('give the query as an argument or with --file, not both');
  if (file)
    return readFile(file, 'utf8').catch((error: Error) =>
      Promise.reject(new UsageError(`--file ${file}: ${error.message}`)),
    );
  if (argument && argument !== '-') return argument;
  if (argument === '-' || !process.stdin.isTTY) return readStdin();
  throw new UsageError("query needs a query: cinv query 'ci_type = k8s.pod | count by namespace'");
}

const cell = (value: unknown): string =>
  value === null || value === undefined
    ? ''
    : value instanceof Date
      ? value.toISOString()
      : typeof value === 'object'
        ? JSON.stringify(value)
        : String(value);

/** A query error as the person at the terminal can act on it: the message and the excerpt. */
function usageOf(error: unknown): unknown {
  if (!(error instanceof AppError) || error.status !== 422) return error;
  const excerpt = typeof error.details.excerpt === 'string' ? `\n${error.details.excerpt}` : '';
  return new UsageError(`${error.message}${excerpt}`);
}

export async function queryCommand(argument: string | undefined, flags: Flags): Promise<void> {
  const text = await queryText(argument, flags);
  const format = single(flags, 'format', false) ?? (process.stdout.isTTY ? 'table' : 'json');
  if (!(FORMATS as readonly string[]).includes(format))
    throw new UsageError(`--format is one of ${FORMATS.join(', ')}`);
  const limitText = single(flags, 'limit', false);
  const limit = limitText === undefined ? undefined : Number(limitText);
  if (limit !== undefined && (!Number.isInteger(limit) || limit < 1 || limit > 1000))
    throw new UsageError('--limit is a whole number from 1 to 1000');
  const config = loadConfig();
  const { runQuery, queryPages } = await import('../inventory/queries/service.js');
  const { csvOf, presentAnswer } = await import('../inventory/queries/presenter.js');
  await withDatabase(config, flags, async (db) => {
    const app = commandContext(db, config);
    const input = {
      query: text,
      as_of: single(flags, 'as-of', false),
      compare_to: single(flags, 'compare-to', false),
      limit,
      explain: flags.explain === true,
      allow_scan: flags['allow-scan'] === true,
    };
    try {
      if (format === 'csv' && !input.explain) {
        let first = true;
        for await (const page of queryPages(app, OPERATOR, input)) {
          process.stdout.write(csvRows(csvOf(page, first)));
          first = false;
        }
        return;
      }
      const answer = await runQuery(app, OPERATOR, input);
      if (format === 'json') return console.log(JSON.stringify(presentAnswer(answer), null, 2));
      if (answer.kind === 'explain') return console.log(JSON.stringify(answer.plan, null, 2));
      const [header, ...rows] = csvOf(answer, true) as unknown[][];
      printTable(
        (header as unknown[]).map(cell),
        rows.map((row) => row.map(cell)),
      );
      if (answer.kind === 'rows' && answer.nextCursor)
        console.error(`(first ${answer.rows.length}: --format csv for all, or --limit)`);
      if (answer.hidden > 0) console.error(`(${answer.hidden} CIs reached outside the data scopes are not shown)`);
    } catch (error) {
      throw usageOf(error);
    }
  });
}
