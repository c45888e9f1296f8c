import os from "node:os";

/**
 * The machine this process runs on, as the driver groups workers and itself by it (which share
 * cores, which are ring neighbours): its hostname, unless MESHTRAIN_MACHINE names it. A container's hostname
 * is its own, not its machine's: in Kubernetes, set MESHTRAIN_MACHINE from the pod's spec.nodeName.
 */
export function machineName(): string {
  const given = process.env.MESHTRAIN_MACHINE?.trim();
  return given ? given.slice(0, 256) : os.hostname();
}
