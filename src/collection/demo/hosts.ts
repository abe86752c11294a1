import type { DemoCluster } from './cluster.js';
import type { Step, Touched } from './step.js';

const HOUR = 3_600_000;

/** The source collected for the last time three hours before the demo's end. */
export const STOPPED: Touched = 'prometheus';

/**
 * The demo's last hours, for the identities' review queue. The Prometheus is collected for the
 * last time three hours before the end (its collector stops reaching it): its node_exporter hosts
 * go stale, past their source's schedule. An hour later east-node-02 is upgraded to a new
 * Bottlerocket release, which its kubelet reports and the stale host does not: the node's
 * operating system version has competing values. An hour before the end the machine under
 * east-node-07 is replaced by a new one that registers under the same name and address, with a new
 * machine id and product UUID, while the stale host still names the old machine: one host name, two
 * machines, a conflict for a person to settle.
 */
export function lastHours(steps: Step[], east: DemoCluster, end: Date): void {
  const before = (hours: number) => new Date(end.getTime() - hours * HOUR);
  steps.push({
    at: before(3),
    what: `${STOPPED}: collected for the last time; its collector stops reaching it`,
    apply: () => [STOPPED],
  });
  steps.push({
    at: before(2),
    what: 'east: east-node-02 upgraded to Bottlerocket OS 1.21.1',
    apply: () => (east.upgradeOs('east-node-02', 'Bottlerocket OS 1.21.1 (aws-k8s-1.30)', '6.1.112'), ['east']),
  });
  steps.push({
    at: before(1),
    what: 'east: east-node-07 replaced by a new machine under the same name',
    apply: () => (east.replaceMachine('east-node-07'), ['east']),
  });
}
