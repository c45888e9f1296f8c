import { Cluster } from "./cluster";
import { registered } from "./live-clusters";

/**
 * The clusters this process launched and has not closed, oldest first: each prints as its
 * workers table, and `close()` on any of them closes it (its local workers exit).
 */
export function liveClusters(): Cluster[] {
  return registered().filter((c): c is Cluster => c instanceof Cluster);
}
