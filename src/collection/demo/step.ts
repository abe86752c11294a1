import type { ServerSource } from './servers.js';

/** What a step changed: a cluster (its drained objects), the Prometheus, the PostgreSQL or a cluster's server. */
export type Touched = 'east' | 'west' | 'prometheus' | 'postgresql' | ServerSource;

/** One moment of the demo's week: what happens then, and what it touched. */
export interface Step {
  at: Date;
  /** What a person would say happened (the progress line). */
  what: string;
  apply(): Touched[];
}
