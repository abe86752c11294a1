const ANALYZE_AFTER_CREATED = 10_000;

/**
 * What the reconciles of one write share: how many CIs they created, and whether the planner
 * statistics were refreshed for them. A large first load leaves the planner believing the tables
 * are nearly empty until autovacuum catches up, which may be minutes later or never; the write's
 * statements after ANALYZE_AFTER_CREATED creations are planned for the real size. Counted per
 * reconcile call, a collection of 185 200 objects in pages of 500 never reached it, and each page's
 * statements read the source's rows through an index that does not lead with the external id.
 */
export interface BulkLoad {
  created: number;
  analyzed: boolean;
  /** How many creations the refresh waits for. */
  analyzeAfter: number;
}

export const newBulkLoad = (analyzeAfter = ANALYZE_AFTER_CREATED): BulkLoad => ({
  created: 0,
  analyzed: false,
  analyzeAfter,
});

/**
 * Counts a batch's creations into the write's: true the one time they reach `analyzeAfter`, when
 * the planner statistics are to be refreshed.
 */
export function countCreated(load: BulkLoad, created: number): boolean {
  load.created += created;
  if (load.analyzed || load.created < load.analyzeAfter) return false;
  load.analyzed = true;
  return true;
}
