import * as path from "node:path";
import ts from "typescript";

/** The repository's root (this file runs from dist/test/helpers), where kubernetes-models resolves. */
const ROOT = path.join(__dirname, "..", "..", "..");

const TYPES: Record<string, { type: string; from: string }> = {
  Secret: { type: "ISecret", from: "kubernetes-models/v1/Secret" },
  Service: { type: "IService", from: "kubernetes-models/v1/Service" },
  Job: { type: "IJob", from: "kubernetes-models/batch/v1/Job" },
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
  const options: ts.CompilerOptions = { strict: true, noEmit: true, skipLibCheck: true, types: [], module: ts.ModuleKind.CommonJS, moduleResolution: ts.ModuleResolutionKind.Node10, target: ts.ScriptTarget.ES2022 };
  const host = ts.createCompilerHost(options);
  const original = { getSourceFile: host.getSourceFile, fileExists: host.fileExists, readFile: host.readFile };
  host.getSourceFile = (name, lang, ...rest) => (name === file ? ts.createSourceFile(name, source, lang) : original.getSourceFile(name, lang, ...rest));
  host.fileExists = (name) => name === file || original.fileExists(name);
  host.readFile = (name) => (name === file ? source : original.readFile(name));
  const program = ts.createProgram([file], options, host);
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const where = d.file && d.start !== undefined ? `${d.file.getLineAndCharacterOfPosition(d.start).line + 1}: ` : "";
    return `${where}${ts.flattenDiagnosticMessageText(d.messageText, "\n")}`;
  });
}
