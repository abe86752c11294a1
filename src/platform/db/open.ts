import type { Config } from '../config/config.js';
import { connectServer, guardDatabase, poolSettings, type Database } from './database.js';
import { openEmbedded } from './embedded.js';

/**
 * Connects to the configured real PostgreSQL, or opens the embedded database. When another cinv
 * process already serves the embedded database, commands join it through its socket; a second
 * server (`joinEmbedded: false`) refuses instead.
 */
export async function openDatabase(
  config: Config,
  options: { joinEmbedded: boolean } = { joinEmbedded: true },
): Promise<Database> {
  const settings = poolSettings(config);
  const raw = config.databaseUrl
    ? connectServer(config.databaseUrl, settings)
    : await openEmbedded(config.dataDir, { join: options.joinEmbedded });
  return guardDatabase(raw, settings);
}
