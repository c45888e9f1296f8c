import * as path from "node:path";
import { typeErrors } from "./type-errors";

/** The repository's root (this file runs from dist/test/helpers), where kubernetes-models resolves. */
const ROOT = path.join(__dirname, "..", "..", "..");

const TYPES: Record<string, { type: string; from: string }> = {
  Secret: { type: "ISecret", from: "kubernetes-models/v1/Secret" },
  Service: { type: "IService", from: "kubernetes-models/v1/Service" },
  Job: { type: "IJob", from: "kubernetes-models/batch/v1/Job" },
  ConfigMap: { type: "IConfigMap", from: "kubernetes-models/v1/ConfigMap" },
};

/**
 * TypeScript's diagnostics for `objects` written as object literals typed with kubernetes-models'
 * interfaces (generated from Kubernetes' OpenAPI). Object literals get excess-property checks,
 * so a field Kubernetes does not have (which the runtime validator lets through) is an error
 * here, as is a wrong type or a missing required field.
 */
export function kubeTypeErrors(objects: ReadonlyArray<{ kind: string }>): string[] {
  const file = path.join(ROOT, "test", "k8s-manifests.check.ts");
  const kinds = [...new Set(objects.map((o) => o.kind))];
  const source = [
    ...kinds.map((k) => {
      const t = TYPES[k];
      if (t === undefined) throw new Error(`no kubernetes-models type listed for kind ${k}`);
      return `import type { ${t.type} } from "${t.from}";`;
    }),
    ...objects.map((o, i) => `export const object${i}: ${TYPES[o.kind]!.type} = ${JSON.stringify(o, null, 2)};`),
  ].join("\n");
  return typeErrors(file, source);
}
