import type { RoleFactory } from "../worker/role";
import { STRATEGIES } from "./registry";

/** Every role a worker can play, by name: the roles of every strategy in the registry. */
export function workerRoles(): Readonly<Record<string, RoleFactory>> {
  return Object.freeze(Object.assign({}, ...Object.values(STRATEGIES).map((s) => s.roles)) as Record<string, RoleFactory>);
}
