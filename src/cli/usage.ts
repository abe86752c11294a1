/**
 * What each command takes: its synopsis, what it does, its options and an example. `cinv --help`
 * lists them; `cinv <command> --help` shows one; an option a command does not take is an error
 * that names it.
 */
export interface OptionUsage {
  /** What its value looks like in the synopsis; none for a switch. */
  value?: string;
  required?: boolean;
  repeatable?: boolean;
  text: string;
}

export interface CommandUsage {
  /** The words that name it: `keys create`. */
  name: string;
  /** Positional arguments after the name, as shown in the synopsis. */
  args?: string;
  summary: string;
  /** Options it takes (`--help`, and `--new-database` where it opens the database, go without saying). */
  options: Record<string, OptionUsage>;
  example: string;
  /** Whether it opens the database (and so takes --new-database). */
  database: boolean;
}

const NEW_DATABASE =
  'create a new embedded database in CINV_DATA_DIR even though a cinv server answers on PORT (which then uses another database)';

export const COMMANDS: readonly CommandUsage[] = [
  {
    name: 'serve',
    summary:
      'API and web interface (/ui/), collection worker, scheduled jobs, migrations, and the indexer when OPENSEARCH_URL is set (npm start)',
    options: {},
    example: 'PORT=8080 cinv serve',
    database: false,
  },
  {
    name: 'api',
    summary: 'the API and web interface only (no scheduled jobs)',
    options: {},
    example: 'cinv api',
    database: false,
  },
  {
    name: 'worker',
    summary: 'scheduled jobs only (collections, lifecycle sweeps, statistics refresh, identity resolution)',
    options: {},
    example: 'cinv worker',
    database: false,
  },
  {
    name: 'indexer',
    summary: 'the outbox indexer only: mirrors change records into OpenSearch',
    options: {},
    example: 'OPENSEARCH_URL=http://localhost:9200 cinv indexer',
    database: false,
  },
  {
    name: 'migrate',
    summary:
      'apply pending database migrations, move existing change records and audit events into monthly partitions ' +
      '(online: the service keeps serving; resumable after an interruption; count and checksum compared), and exit',
    options: {
      'batch-size': {
        value: 'N',
        text: 'rows copied per transaction while moving into partitions, 100 to 100000 (default 10000)',
      },
    },
    example: 'cinv migrate',
    database: true,
  },
  {
    name: 'keys create',
    summary: 'create an API key and print it once (on standard output; what it is, on standard error)',
    options: {
      tier: {
        value: 'adm|svc|ro',
        required: true,
        text: 'adm (everything), svc (the --permission and --scope given) or ro (reads; within --scope when given)',
      },
      name: { value: 'NAME', required: true, text: 'a name to recognise the key by' },
      scope: {
        value: 'SOURCE[:INSTANCE]',
        repeatable: true,
        text: "the data the key may see (svc and ro keys); '*' is every source",
      },
      permission: {
        value: 'RESOURCE:ACTION',
        repeatable: true,
        text: 'what the key may do, e.g. configuration_items:read (svc keys)',
      },
      'expires-in': { value: 'DURATION', text: 'a lifetime such as 90d or 12h; without it the key does not expire' },
    },
    example: 'cinv keys create --tier svc --name collector --permission configuration_items:write --scope k8s-prod',
    database: true,
  },
  {
    name: 'keys list',
    summary: 'the API keys (never their secrets): id, tier, name, hint, created, expiry, last use',
    options: { 'include-revoked': { text: 'list revoked keys too' } },
    example: 'cinv keys list --include-revoked',
    database: true,
  },
  {
    name: 'keys revoke',
    args: 'ID',
    summary: 'revoke an API key; it is refused from the next request on',
    options: {},
    example: 'cinv keys revoke 0192c3a4-…',
    database: true,
  },
  {
    name: 'keys rotate-master',
    summary:
      're-wrap the data keys of source credentials under CINV_MASTER_KEY (the old key in CINV_MASTER_KEY_PREVIOUS); safe to interrupt and run again',
    options: {},
    example: 'CINV_MASTER_KEY=… CINV_MASTER_KEY_PREVIOUS=… cinv keys rotate-master',
    database: true,
  },
  {
    name: 'keys generate',
    summary: 'print a fresh key without storing it (for CINV_BOOTSTRAP_ADMIN_KEY)',
    options: { tier: { value: 'adm|svc|ro|usr', text: 'the tier of the key (default adm)' } },
    example: 'export CINV_BOOTSTRAP_ADMIN_KEY=$(cinv keys generate)',
    database: false,
  },
  {
    name: 'users promote',
    args: 'EMAIL',
    summary:
      'make the user with this email a superadmin (the first one; later ones are granted through the API by a superadmin)',
    options: {},
    example: 'cinv users promote ops@example.com',
    database: true,
  },
  {
    name: 'ingest',
    summary:
      'reconcile a universal-format snapshot file into the inventory, and print what changed (a summary on a terminal, else JSON)',
    options: {
      source: {
        value: 'NAME',
        required: true,
        text: 'the source to ingest into (created as a push-only source when it does not exist)',
      },
      file: {
        value: 'FILE',
        required: true,
        text: 'a JSON snapshot {scope_id, mode, items, deletions} or a JSON array of items',
      },
      scope: { value: 'INSTANCE', text: 'the instance (scope_id) the items belong to; overrides the file' },
      mode: {
        value: 'snapshot|delta',
        text: 'snapshot (items not in the file become inactive) or delta; overrides the file',
      },
      'collector-type': { value: 'TYPE', text: 'the collector type of a source this creates (default universal)' },
      json: {
        text:
          'print the outcome as JSON (source, received, created, updated, unchanged, reactivated, archived, changes, relationships); ' +
          'it is printed as JSON too when standard output is not a terminal, and as a summary when it is',
      },
    },
    example: 'cinv ingest --source k8s-prod --scope cluster-a --file snapshot.json',
    database: true,
  },
  {
    name: 'demo',
    summary:
      'load a generated demo inventory: two Kubernetes clusters, a Prometheus and a PostgreSQL as sources named demo-*, with a week of history ' +
      '(rollouts, scaling, a node replaced, an incident after a configuration change); loaded already, nothing changes',
    options: { remove: { text: 'remove the demo sources with all their CIs, relationships and history' } },
    example: 'cinv demo && cinv demo --remove',
    database: true,
  },
  {
    name: 'query',
    args: "'QUERY'",
    summary:
      'run a query-language query over the whole inventory (as the operator: every source, no data scopes) and print the answer; ' +
      'the query is the argument, --file, or standard input (- or a pipe)',
    options: {
      file: { value: 'FILE', text: 'read the query from a file' },
      'as-of': {
        value: 'MOMENT',
        text: 'evaluate the query against the inventory as it was then (ISO 8601 or a baseline name)',
      },
      'compare-to': { value: 'MOMENT', text: 'answer what matches now (or at --as-of) and did not then' },
      format: {
        value: 'table|json|csv',
        text: 'table on a terminal, JSON otherwise; csv streams every row (100 000 at most)',
      },
      limit: { value: 'N', text: "rows of the first page (1 to 1000; default the query's limit, else 100)" },
      explain: { text: 'print the plan summarised instead of running the query' },
      'allow-scan': { text: 'run even when the query reads a large table whole' },
    },
    example: "cinv query 'ci_type = k8s.pod and namespace = shop -[runs_on]-> * | count by name'",
    database: true,
  },
  {
    name: 'sweep',
    summary: 'run the lifecycle sweep once (inactive, archive, remove)',
    options: {},
    example: 'cinv sweep',
    database: true,
  },
  {
    name: 'quality recount',
    summary:
      'check every CI for data quality again and compare the counters the writes kept with a count from the rows (exit 1 when they differ)',
    options: {
      fix: { text: 'replace the counters by the recount where they differ' },
      tenant: { value: 'SLUG', text: 'one tenant only (default: every tenant)' },
    },
    example: 'cinv quality recount --fix',
    database: true,
  },
  {
    name: 'refresh-stats',
    summary: 'bring the statistics pre-aggregate up to date now',
    options: {},
    example: 'cinv refresh-stats',
    database: true,
  },
  {
    name: 'reindex',
    summary: 'rebuild the OpenSearch index from PostgreSQL into a new index, verify it, and move the alias to it',
    options: {
      resume: { text: 'continue an interrupted reindex' },
      'delete-old': { text: 'delete the indices the alias pointed at before' },
      'batch-size': { value: 'N', text: 'documents per bulk request, 1 to 50000 (default 2000)' },
    },
    example: 'OPENSEARCH_URL=http://localhost:9200 cinv reindex --delete-old',
    database: true,
  },
  {
    name: 'outbox',
    summary: 'show the outbox backlog, lag and parked rows',
    options: {},
    example: 'cinv outbox',
    database: true,
  },
  {
    name: 'outbox retry',
    summary: 're-queue the parked rows',
    options: {},
    example: 'cinv outbox retry',
    database: true,
  },
];

function optionSynopsis(name: string, option: OptionUsage): string {
  const text = option.value ? `--${name} ${option.value}` : `--${name}`;
  const shown = option.required ? text : `[${text}]`;
  return option.repeatable ? `${shown}...` : shown;
}

const synopsis = (command: CommandUsage): string =>
  [command.name, command.args, ...Object.entries(command.options).map(([name, option]) => optionSynopsis(name, option))]
    .filter(Boolean)
    .join(' ');

/** `cinv --help`: every command with its synopsis and what it does. */
export function globalHelp(): string {
  const lines = COMMANDS.map((command) => `  ${synopsis(command)}\n      ${command.summary}`);
  return `cinv: Configuration Inventory Service

Usage: cinv <command> [options]       cinv <command> --help (or cinv help <command>) shows one command's options and an example
       cinv --version                  prints the version

Commands:
${lines.join('\n')}

Without DATABASE_URL every command uses the embedded database in CINV_DATA_DIR (default ./data);
while a server runs on it, commands reach it through the server's socket. Commands that open the
database say which one on standard error.
Environment variables are listed in docs/configuration.md.`;
}

/** `cinv <command> --help`. */
export function commandHelp(command: CommandUsage): string {
  const options: [string, string][] = Object.entries(command.options).map(([name, option]) => [
    option.value ? `--${name} ${option.value}` : `--${name}`,
    option.repeatable ? `${option.text} (repeatable)` : option.text,
  ]);
  if (command.database) options.push(['--new-database', NEW_DATABASE]);
  options.push(['--help', 'show this help']);
  const width = Math.max(...options.map(([name]) => name.length));
  return [
    `Usage: cinv ${synopsis(command)}`,
    '',
    command.summary,
    '',
    'Options:',
    ...options.map(([name, text]) => `  ${name.padEnd(width)}  ${text}`),
    '',
    'Example:',
    `  ${command.example}`,
  ].join('\n');
}

/** `cinv keys --help`: the subcommands of a command group, each with its synopsis and what it does. */
export function familyHelp(word: string): string {
  const members = COMMANDS.filter((command) => command.name.startsWith(`${word} `));
  const lines = members.map((command) => `  ${synopsis(command)}\n      ${command.summary}`);
  return [
    `Usage: cinv ${word} <command> [options]`,
    '',
    'Commands:',
    ...lines,
    '',
    `cinv ${word} <command> --help shows one command's options and an example.`,
  ].join('\n');
}

/** The command the positional words name (longest match first), if any. */
export function findCommand(words: readonly string[]): CommandUsage | undefined {
  const two = words.slice(0, 2).join(' ');
  return COMMANDS.find((command) => command.name === two) ?? COMMANDS.find((command) => command.name === words[0]);
}

/** The subcommands of a first word (`keys` → create, list, ...). */
export function findFamily(word: string): string[] {
  return COMMANDS.filter((command) => command.name.startsWith(`${word} `)).map((command) =>
    command.name.slice(word.length + 1),
  );
}

/** The options a command takes, as its help lists them. */
export function optionsOf(command: CommandUsage): string[] {
  return [...Object.keys(command.options), ...(command.database ? ['new-database'] : []), 'help'];
}

/** Refuses an option the command does not take, naming it. */
export function unknownOption(command: CommandUsage, given: readonly string[]): string | undefined {
  const taken = optionsOf(command);
  return given.find((option) => !taken.includes(option));
}

/** The edit distance between two words (insertions, deletions, substitutions and swaps of neighbours). */
export function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1);
    }
  }
  return d[a.length]![b.length]!;
}

/** The known word nearest to `word`, when it is near enough to be a slip (at most a third of it, and 2, apart), or one it begins. */
export function nearest(word: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of known) {
    const distance = editDistance(word, candidate);
    if (distance < bestDistance) [best, bestDistance] = [candidate, distance];
  }
  if (best !== undefined && bestDistance <= Math.min(2, Math.max(1, Math.floor(best.length / 3)))) return best;
  return word.length >= 3 ? known.find((candidate) => candidate.startsWith(word)) : undefined;
}

/**
 * What is said of an option the command does not take (`given` as written: `--nme`, `-x`): which
 * one, what the command takes, and the nearest one it takes when the given one looks like a slip.
 * `command` undefined: the options of `cinv` itself.
 */
export function unknownOptionMessage(command: CommandUsage | undefined, given: string): string {
  const taken = command ? optionsOf(command) : ['help', 'version'];
  const name = command ? `cinv ${command.name}` : 'cinv';
  const near = given.startsWith('--') ? nearest(given.slice(2), taken) : undefined;
  return (
    `"${name}" takes no option ${given}${near ? ` (did you mean --${near}?)` : ''}; ` +
    `it takes ${taken.map((o) => `--${o}`).join(', ')}`
  );
}
